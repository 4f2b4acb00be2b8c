#!/usr/bin/python3
"""bench_torch_policy.py — the PyTorch eager peer of `vla bench policy`.

The same architecture as a vla.c config (configs/*.json: pi05 or groot) as a
Python user of LeRobot/openpi would run it on a CPU: nn.Modules in float32,
a padded batch [B, L, ·] (text padded to language.max_tokens, as LeRobot
pads), dense additive attention masks (Debian's torch 1.13 has no fused
attention on CPU), autograd, and torch.optim.AdamW. It times training steps
— forward, backward, AdamW — and prints one JSON line:

  {"bench":"policy_train_peer","config":…,"threads":…,"batch":…,"samples_per_s":…,"torch":…}

Run with Debian's interpreter (python3-torch):
  /usr/bin/python3 tools/bench_torch_policy.py --config configs/pi05-small.json --batch 32 --threads 2

On a GPU (scripts/gpu_check.sh's `torch` stage; torch >= 2): --device cuda
--precision bf16 runs the same model as a PyTorch user trains it there:
f32 master weights, the forward and backward under torch.autocast(bf16),
attention through F.scaled_dot_product_attention (fused kernels), every
tensor made on the device (torch.set_default_device).

Architectures (as src/policy and tools/ref_*.py): SigLIP-style ViT; π0.5:
Gemma layers (RMSNorm 1+w, RoPE, MQA, GeGLU) over image+text and an AdaRMS
expert over the action chunk, one prefix-LM attention per layer; GR00T: the
same ViT → mlp1 → Qwen3 layers (q/k norm, RoPE, causal, SwiGLU) → vlln →
VL self-attention blocks → DiT (AdaLN, cross-attention to the VL tokens in
even blocks) over [state, future tokens, actions]. Groups the config freezes
run under torch.no_grad() and have no optimizer state, as in the published
GR00T recipe. Weight initialisation does not matter for speed and is
PyTorch's default.
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def rms(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps, one_plus):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(dim) if one_plus else torch.ones(dim))
        self.eps, self.one_plus = eps, one_plus

    def forward(self, x):
        return rms(x, self.eps) * ((1 + self.w) if self.one_plus else self.w)


def rope_tables(n, hd, theta):
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    ang = torch.arange(n, dtype=torch.float32)[:, None] * inv[None]
    return torch.cat([ang.cos(), ang.cos()], -1), torch.cat([ang.sin(), ang.sin()], -1)


def rope(x, cos, sin):  # x [B, h, L, d]
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


USE_SDPA = False  # set by main() for --device cuda


def attention(q, k, v, bias):
    """q [B, H, L, d], k/v [B, Hk, M, d] (repeated to H), bias [B or 1, 1, L, M] additive."""
    if k.shape[1] != q.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    if USE_SDPA:  # the fused kernels a GPU user gets (torch >= 2)
        if not torch.is_tensor(bias):
            bias = torch.zeros((), dtype=q.dtype)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + bias
    return torch.softmax(s, -1) @ v


class ViT(nn.Module):
    def __init__(self, v):
        super().__init__()
        D, self.heads = v["width"], v["heads"]
        self.patch = nn.Conv2d(v["channels"] if "channels" in v else 3, D, v["patch"], v["patch"])
        side = v["image_size"] // v["patch"]
        self.pos = nn.Parameter(torch.zeros(side * side, D))
        self.layers = nn.ModuleList()
        for _ in range(v["depth"]):
            self.layers.append(nn.ModuleDict(dict(ln1=nn.LayerNorm(D, eps=1e-6), q=nn.Linear(D, D), k=nn.Linear(D, D),
                                                  v=nn.Linear(D, D), o=nn.Linear(D, D), ln2=nn.LayerNorm(D, eps=1e-6),
                                                  fc1=nn.Linear(D, v["mlp"]), fc2=nn.Linear(v["mlp"], D))))
        self.post = nn.LayerNorm(D, eps=1e-6)

    def forward(self, img):
        x = self.patch(2 * img - 1).flatten(2).transpose(1, 2) + self.pos
        B, T, D = x.shape
        H, hd = self.heads, D // self.heads
        for L in self.layers:
            h = L["ln1"](x)
            q, k, v = (L[n](h).view(B, T, H, hd).transpose(1, 2) for n in ("q", "k", "v"))
            x = x + L["o"](attention(q, k, v, 0.0).transpose(1, 2).reshape(B, T, D))
            x = x + L["fc2"](F.gelu(L["fc1"](L["ln2"](x)), approximate="tanh"))
        return self.post(x)


def gated_mlp(x, gate, up, down, act):
    return down(act(gate(x)) * up(x))


class Pi05(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        l, e, a = c["language"], c["expert"], c["action"]
        W, We, H, Hk, hd = l["width"], e["width"], l["heads"], l["kv_heads"], l["head_dim"]
        self.vit = ViT(c["vision"])
        self.proj = nn.Linear(c["vision"]["width"], W)
        self.embed = nn.Embedding(l["vocab"], W)
        self.lm, self.ex = nn.ModuleList(), nn.ModuleList()
        for _ in range(l["depth"]):
            self.lm.append(nn.ModuleDict(dict(
                n1=RMSNorm(W, 1e-6, True), q=nn.Linear(W, H * hd, bias=False), k=nn.Linear(W, Hk * hd, bias=False),
                v=nn.Linear(W, Hk * hd, bias=False), o=nn.Linear(H * hd, W, bias=False), n2=RMSNorm(W, 1e-6, True),
                gate=nn.Linear(W, l["mlp"], bias=False), up=nn.Linear(W, l["mlp"], bias=False),
                down=nn.Linear(l["mlp"], W, bias=False))))
            self.ex.append(nn.ModuleDict(dict(
                d1=nn.Linear(We, 3 * We), q=nn.Linear(We, H * hd, bias=False), k=nn.Linear(We, Hk * hd, bias=False),
                v=nn.Linear(We, Hk * hd, bias=False), o=nn.Linear(H * hd, We, bias=False), d2=nn.Linear(We, 3 * We),
                gate=nn.Linear(We, e["mlp"], bias=False), up=nn.Linear(We, e["mlp"], bias=False),
                down=nn.Linear(e["mlp"], We, bias=False))))
        self.lm_norm = RMSNorm(W, 1e-6, True)  # the LM's final norm: the action loss never reaches it (as in openpi)
        self.fin = nn.Linear(We, 3 * We)
        self.ain, self.aout = nn.Linear(a["dim"], We), nn.Linear(We, a["dim"])
        self.tin, self.tout = nn.Linear(We, We), nn.Linear(We, We)
        self.H, self.Hk, self.hd = H, Hk, hd

    def time_cond(self, t):
        We, fl = self.c["expert"]["width"], self.c["flow"]
        frac = torch.linspace(0.0, 1.0, We // 2)
        period = fl.get("time_min_period", 4e-3) * (fl.get("time_max_period", 4.0) / fl.get("time_min_period", 4e-3)) ** frac
        ang = t[:, None] * (2 * math.pi / period)[None]
        return F.silu(self.tout(F.silu(self.tin(torch.cat([ang.sin(), ang.cos()], 1)))))

    def loss(self, b):
        c, H, Hk, hd = self.c, self.H, self.Hk, self.hd
        B, W = b["ids"].shape[0], c["language"]["width"]
        xp = torch.cat([self.proj(self.vit(b["images"])), self.embed(b["ids"]) * math.sqrt(W)], 1)
        Lp, Hz = xp.shape[1], c["action"]["horizon"]
        t = b["t"]
        x_t = t[:, None, None] * b["noise"] + (1 - t[:, None, None]) * b["actions"]
        xa, cond = self.ain(x_t), self.time_cond(t)
        # prefix-LM: prefix keys (not padding) for everyone, action keys for actions only
        keep = torch.cat([b["prefix_valid"], torch.ones(B, Hz, dtype=torch.bool)], 1)  # [B, Lp+Hz] keys
        allow = keep[:, None, :].repeat(1, Lp + Hz, 1)
        allow[:, :Lp, Lp:] = False
        bias = torch.zeros(B, 1, Lp + Hz, Lp + Hz).masked_fill(~allow[:, None], float("-inf"))
        cos, sin = rope_tables(Lp + Hz, hd, c["language"].get("rope_theta", 10000.0))

        def ada(x, dense):
            scale, shift, gate = dense(cond)[:, None].chunk(3, -1)
            return rms(x, 1e-6) * (1 + scale) + shift, gate

        for P, E in zip(self.lm, self.ex):
            hp = P["n1"](xp)
            ha, g1 = ada(xa, E["d1"])
            q = torch.cat([P["q"](hp), E["q"](ha)], 1).view(B, -1, H, hd).transpose(1, 2)
            k = torch.cat([P["k"](hp), E["k"](ha)], 1).view(B, -1, Hk, hd).transpose(1, 2)
            v = torch.cat([P["v"](hp), E["v"](ha)], 1).view(B, -1, Hk, hd).transpose(1, 2)
            o = attention(rope(q, cos, sin), rope(k, cos, sin), v, bias).transpose(1, 2).reshape(B, Lp + Hz, H * hd)
            xp = xp + P["o"](o[:, :Lp])
            xp = xp + gated_mlp(P["n2"](xp), P["gate"], P["up"], P["down"], lambda z: F.gelu(z, approximate="tanh"))
            xa = xa + E["o"](o[:, Lp:]) * g1
            h, g2 = ada(xa, E["d2"])
            xa = xa + gated_mlp(h, E["gate"], E["up"], E["down"], lambda z: F.gelu(z, approximate="tanh")) * g2
        h, _ = ada(xa, self.fin)
        return F.mse_loss(self.aout(h), b["noise"] - b["actions"])


class Block(nn.Module):
    """diffusers BasicTransformerBlock as GR00T uses it (VL adapter: affine LNs; DiT: AdaLN, cross or self)."""

    def __init__(self, D, heads, ff, kv_dim, ada):
        super().__init__()
        self.ada, self.heads = ada, heads
        self.n1 = nn.Linear(D, 2 * D) if ada else nn.LayerNorm(D)
        self.q, self.k, self.v, self.o = nn.Linear(D, D), nn.Linear(kv_dim, D), nn.Linear(kv_dim, D), nn.Linear(D, D)
        self.n3 = nn.LayerNorm(D, elementwise_affine=not ada)
        self.f1, self.f2 = nn.Linear(D, ff * D), nn.Linear(ff * D, D)

    def forward(self, x, ctx=None, temb=None, bias=0.0):
        B, N, D = x.shape
        if self.ada:
            scale, shift = self.n1(F.silu(temb))[:, None].chunk(2, -1)
            h = F.layer_norm(x, (D,), eps=1e-5) * (1 + scale) + shift
        else:
            h = self.n1(x)
        src = h if ctx is None else ctx
        hd = D // self.heads
        q = self.q(h).view(B, N, self.heads, hd).transpose(1, 2)
        k = self.k(src).view(B, -1, self.heads, hd).transpose(1, 2)
        v = self.v(src).view(B, -1, self.heads, hd).transpose(1, 2)
        x = x + self.o(attention(q, k, v, bias).transpose(1, 2).reshape(B, N, D))
        return x + self.f2(F.gelu(self.f1(self.n3(x)), approximate="tanh"))


class Groot(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        l, h, a = c["language"], c["action_head"], c["action"]
        W, H, Hk, hd = l["width"], l["heads"], l["kv_heads"], l["head_dim"]
        D = h["dit_heads"] * h["dit_head_dim"]
        self.vit, self.mlp1, self.embed = ViT(c["vision"]), nn.Linear(c["vision"]["width"], W), nn.Embedding(l["vocab"], W)
        self.lm = nn.ModuleList([nn.ModuleDict(dict(
            n1=RMSNorm(W, 1e-6, False), q=nn.Linear(W, H * hd, bias=False), k=nn.Linear(W, Hk * hd, bias=False),
            v=nn.Linear(W, Hk * hd, bias=False), o=nn.Linear(H * hd, W, bias=False), qn=RMSNorm(hd, 1e-6, False),
            kn=RMSNorm(hd, 1e-6, False), n2=RMSNorm(W, 1e-6, False), gate=nn.Linear(W, l["mlp"], bias=False),
            up=nn.Linear(W, l["mlp"], bias=False), down=nn.Linear(l["mlp"], W, bias=False))) for _ in range(l["depth"])])
        self.final = RMSNorm(W, 1e-6, False)
        self.vlln = nn.LayerNorm(W)
        self.vl = nn.ModuleList([Block(W, h["vl_heads"], h.get("ff_mult", 4), W, False) for _ in range(h["vl_layers"])])
        self.te1, self.te2 = nn.Linear(h["timestep_channels"], D), nn.Linear(D, D)
        self.dit = nn.ModuleList([Block(D, h["dit_heads"], h.get("ff_mult", 4), W if i % 2 == 0 else D, True)
                                  for i in range(h["dit_layers"])])
        self.po1, self.po2 = nn.Linear(D, 2 * D), nn.Linear(D, h["output_dim"])
        self.st1, self.st2 = nn.Linear(a["state_dim"], h["state_hidden"]), nn.Linear(h["state_hidden"], D)
        self.a1, self.a2, self.a3 = nn.Linear(a["dim"], D), nn.Linear(2 * D, D), nn.Linear(D, D)
        self.d1, self.d2 = nn.Linear(h["output_dim"], h["output_dim"]), nn.Linear(h["output_dim"], a["dim"])
        self.pos = nn.Parameter(torch.zeros(h["max_seq_len"], D))
        self.fut = nn.Parameter(torch.zeros(h["future_tokens"], D))
        self.H, self.Hk, self.hd, self.D = H, Hk, hd, D
        self.frozen = [self.vit, self.mlp1, self.embed, self.lm, self.final] if "language" in c.get("frozen", []) else []
        for m in self.frozen:
            for p in m.parameters():
                p.requires_grad_(False)

    def backbone(self, b):
        c, H, Hk, hd = self.c, self.H, self.Hk, self.hd
        x = torch.cat([self.mlp1(self.vit(b["images"])), self.embed(b["ids"])], 1)
        B, P, W = x.shape
        keep = b["prefix_valid"]
        causal = torch.ones(P, P, dtype=torch.bool).tril()
        bias = torch.zeros(B, 1, P, P).masked_fill(~(causal[None] & keep[:, None, :])[:, None], float("-inf"))
        cos, sin = rope_tables(P, hd, c["language"].get("rope_theta", 1e6))
        for L in self.lm:
            h = L["n1"](x)
            q = L["qn"](L["q"](h).view(B, P, H, hd)).transpose(1, 2)
            k = L["kn"](L["k"](h).view(B, P, Hk, hd)).transpose(1, 2)
            v = L["v"](h).view(B, P, Hk, hd).transpose(1, 2)
            x = x + L["o"](attention(rope(q, cos, sin), rope(k, cos, sin), v, bias).transpose(1, 2).reshape(B, P, H * hd))
            x = x + gated_mlp(L["n2"](x), L["gate"], L["up"], L["down"], F.silu)
        return self.final(x)

    def loss(self, b):
        c, D = self.c, self.D
        if self.frozen:
            with torch.no_grad():
                feats = self.backbone(b)
        else:
            feats = self.backbone(b)
        B, P, _ = feats.shape
        kbias = torch.zeros(B, 1, 1, P).masked_fill(~b["prefix_valid"][:, None, None], float("-inf"))
        vl = self.vlln(feats)
        for blk in self.vl:
            vl = blk(vl, bias=kbias)
        t = b["t"]
        bucket = (t * 1000).long().float()
        half = c["action_head"]["timestep_channels"] // 2
        f = torch.exp(-math.log(10000.0) * torch.arange(half) / (half - 1.0))
        a_ = bucket[:, None] * f[None]
        temb = self.te2(F.silu(self.te1(torch.cat([a_.cos(), a_.sin()], -1))))
        x_t = (1 - t[:, None, None]) * b["noise"] + t[:, None, None] * b["actions"]
        Hz = c["action"]["horizon"]
        fd = torch.exp(-math.log(10000.0) * torch.arange(D // 2) / (D // 2))
        tau = torch.cat([(bucket[:, None] * fd).sin(), (bucket[:, None] * fd).cos()], -1)[:, None].expand(B, Hz, D)
        act = self.a3(F.silu(self.a2(torch.cat([self.a1(x_t), tau], -1)))) + self.pos[:Hz]
        st = self.st2(F.relu(self.st1(b["state"])))[:, None]
        x = torch.cat([st, self.fut[None].expand(B, -1, -1), act], 1)
        for i, blk in enumerate(self.dit):
            x = blk(x, ctx=vl if i % 2 == 0 else None, temb=temb, bias=kbias if i % 2 == 0 else 0.0)
        shift, scale = self.po1(F.silu(temb))[:, None].chunk(2, -1)
        y = self.po2(F.layer_norm(x[:, -Hz:], (D,), eps=1e-6) * (1 + scale) + shift)
        pred = self.d2(F.relu(self.d1(y)))
        return F.mse_loss(pred, b["actions"] - b["noise"])


def make_batch(c, B):
    v, l, a = c["vision"], c["language"], c["action"]
    side = v["image_size"] // v["patch"]
    n_img, n_txt = side * side * v.get("cameras", 1), l["max_tokens"]
    return dict(
        images=torch.rand(B, v.get("channels", 3), v["image_size"], v["image_size"]),
        ids=torch.randint(0, l["vocab"], (B, n_txt)),
        prefix_valid=torch.ones(B, n_img + n_txt, dtype=torch.bool),  # LeRobot pads to max_tokens
        state=torch.rand(B, a["state_dim"]) * 2 - 1,
        actions=torch.randn(B, a["horizon"], a["dim"]) * 0.5,
        noise=torch.randn(B, a["horizon"], a["dim"]),
        t=torch.rand(B))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True, help="configs/<name>.json")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (torch >= 2)")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"], help="bf16: torch.autocast")
    args = ap.parse_args()
    global USE_SDPA
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.device != "cpu":
        torch.set_default_device(args.device)
        USE_SDPA = hasattr(F, "scaled_dot_product_attention")
    with open(args.config) as f:
        c = json.load(f)
    try:
        run(args, c)
    except torch.cuda.OutOfMemoryError as e:  # a figure too: the peer cannot train this batch on this card
        print(json.dumps(dict(bench="policy_train_peer", config=c.get("name", args.config), threads=args.threads,
                              device=args.device, precision=args.precision, batch=args.batch, out_of_memory=True,
                              why=str(e).splitlines()[0][:200], torch=torch.__version__)), flush=True)


def run(args, c):
    model = Pi05(c) if c["policy"] == "pi05" else Groot(c)
    params = [p for p in model.parameters() if p.requires_grad]
    # on a GPU the optimizer users pick: fused AdamW (one kernel for all tensors; the argument is torch >= 2's,
    # Debian 12's CPU torch 1.13 has no fused AdamW)
    fused = dict(fused=True) if args.device != "cpu" else {}
    opt = torch.optim.AdamW(params, lr=1e-4, **fused)
    b = make_batch(c, args.batch)

    amp = args.precision == "bf16"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(args.device.split(":")[0], dtype=torch.bfloat16, enabled=amp):
            loss = model.loss(b)
        loss.backward()
        opt.step()
        return loss.item()

    step()  # warm-up
    steps, t0 = 0, time.perf_counter()
    while steps < 2 or time.perf_counter() - t0 < args.seconds:
        step()
        steps += 1
    el = time.perf_counter() - t0
    print(json.dumps(dict(bench="policy_train_peer", config=c.get("name", args.config), threads=args.threads,
                          device=args.device, precision=args.precision,
                          batch=args.batch, steps=steps, samples_per_s=round(args.batch * steps / el, 3),
                          trainable_params=sum(p.numel() for p in params), torch=torch.__version__)), flush=True)


if __name__ == "__main__":
    main()
