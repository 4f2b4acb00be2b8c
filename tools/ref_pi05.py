#!/usr/bin/python3
"""ref_pi05.py — a plain PyTorch (float64, CPU, dense masks, autograd)
implementation of the π0.5-style policy of src/policy/pi05.c, used to make
the goldens tests/policy/test_pi05.c compares against.

Input:  tests/policy/goldens/pi05_nano_inputs.safetensors, written by the C
        test (PI05_WRITE_INPUTS=1 build-pi05/tests/test_pi05): every
        parameter ("param.<checkpoint name>"), the packed batch ("batch.*"),
        the flow draws the C loss makes ("flow.t", "flow.noise") and the
        initial sampling noise ("sample.noise").
Output: tests/policy/goldens/pi05_nano_outputs.safetensors: "loss",
        "grad.<name>" for every parameter, "pred" (the velocity), and
        "sample.actions" (10 Euler steps from sample.noise, t = 1 → 0).

Architecture (openpi models/pi0.py, gemma.py with pi05=True): SigLIP-style ViT
(2x−1 pixels, patch conv, learned positions, pre-LN blocks with GELU-tanh
MLP, post-LN) → projector to the LM width; text embeddings × sqrt(width);
Gemma layers (RMSNorm with 1+w, GeGLU, RoPE rotate-half) for prefix tokens
and action-expert layers (AdaRMSNorm from the time condition, gated
residuals) for action tokens, sharing one prefix-LM attention per layer
(key j visible to query i iff same sample and group[j] <= group[i]); time
condition = swish(time_mlp_out(swish(time_mlp_in(sincos(t))))). Loss: MSE
over real entries (not padded steps, d < real_action_dim), mean over them.

Safetensors is parsed and written by hand (8-byte header length, JSON,
data): Debian has no safetensors package. Run with Debian's interpreter:
    /usr/bin/python3 tools/ref_pi05.py
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IN = os.path.join(ROOT, "tests/policy/goldens/pi05_nano_inputs.safetensors")
OUT = os.path.join(ROOT, "tests/policy/goldens/pi05_nano_outputs.safetensors")
DT = {"F32": np.float32, "I32": np.int32, "U8": np.uint8, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    data = buf[8 + n:]
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        arr = np.frombuffer(data[b:e], dtype=DT[info["dtype"]]).reshape(info["shape"])
        out[name] = arr.copy()
    return out, meta


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype=np.float32)
        raw = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def load_config(name):
    with open(os.path.join(ROOT, "configs", name + ".json")) as f:
        return json.load(f)


class Pi05:
    def __init__(self, cfg, meta, params):
        self.c = cfg
        self.p = params
        self.rope_theta = float(meta["rope_theta"])
        self.eps = float(meta["lm_norm_eps"])
        self.vit_eps = float(meta["vit_norm_eps"])
        self.steps = int(meta["flow_steps"])

    def P(self, name):
        return self.p[name]

    # ---- vision ----
    def vit(self, images):
        v = self.c["vision"]
        pre = "paligemma_with_expert.paligemma.model.vision_tower.vision_model"
        D, heads = v["width"], v["heads"]
        hd = D // heads
        x = F.conv2d(2 * images - 1, self.P(pre + ".embeddings.patch_embedding.weight"),
                     self.P(pre + ".embeddings.patch_embedding.bias"), stride=v["patch"])
        x = x.flatten(2).transpose(1, 2)
        x = x + self.P(pre + ".embeddings.position_embedding.weight")[None]
        n, T, _ = x.shape
        for l in range(v["depth"]):
            lp = "%s.encoder.layers.%d" % (pre, l)
            h = F.layer_norm(x, (D,), self.P(lp + ".layer_norm1.weight"), self.P(lp + ".layer_norm1.bias"), self.vit_eps)

            def proj(k):
                return F.linear(h, self.P(lp + ".self_attn.%s.weight" % k), self.P(lp + ".self_attn.%s.bias" % k))

            q = proj("q_proj").view(n, T, heads, hd).transpose(1, 2)
            k = proj("k_proj").view(n, T, heads, hd).transpose(1, 2)
            vv = proj("v_proj").view(n, T, heads, hd).transpose(1, 2)
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd), dim=-1) @ vv
            att = att.transpose(1, 2).reshape(n, T, D)
            x = x + F.linear(att, self.P(lp + ".self_attn.out_proj.weight"), self.P(lp + ".self_attn.out_proj.bias"))
            h = F.layer_norm(x, (D,), self.P(lp + ".layer_norm2.weight"), self.P(lp + ".layer_norm2.bias"), self.vit_eps)
            h = F.gelu(F.linear(h, self.P(lp + ".mlp.fc1.weight"), self.P(lp + ".mlp.fc1.bias")), approximate="tanh")
            x = x + F.linear(h, self.P(lp + ".mlp.fc2.weight"), self.P(lp + ".mlp.fc2.bias"))
        return F.layer_norm(x, (D,), self.P(pre + ".post_layernorm.weight"), self.P(pre + ".post_layernorm.bias"),
                            self.vit_eps)

    # ---- pieces ----
    def rms(self, x):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps)

    def rope(self, x, pos):  # x [T, h, d]
        d = x.shape[-1]
        half = d // 2
        inv = self.rope_theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / d)
        a = pos.double()[:, None] * inv[None]
        cos, sin = torch.cos(a)[:, None, :], torch.sin(a)[:, None, :]
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    @staticmethod
    def geglu(x, gate, up, down):
        return F.linear(F.gelu(F.linear(x, gate), approximate="tanh") * F.linear(x, up), down)

    def time_cond(self, t):
        We = self.c["expert"]["width"]
        fl = self.c["flow"]
        frac = torch.linspace(0.0, 1.0, We // 2, dtype=torch.float64)
        period = fl["time_min_period"] * (fl["time_max_period"] / fl["time_min_period"]) ** frac
        ang = t[:, None] * (2 * math.pi / period)[None]
        temb = torch.cat([torch.sin(ang), torch.cos(ang)], dim=1)
        h = F.silu(F.linear(temb, self.P("time_mlp_in.weight"), self.P("time_mlp_in.bias")))
        return F.silu(F.linear(h, self.P("time_mlp_out.weight"), self.P("time_mlp_out.bias")))

    # ---- the whole policy ----
    def forward(self, b, x_t, t):
        c = self.c
        lm, ex = c["language"], c["expert"]
        W, We, H, KV, hd = lm["width"], ex["width"], lm["heads"], lm["kv_heads"], lm["head_dim"]
        Hz, A = c["action"]["horizon"], c["action"]["dim"]
        pg = "paligemma_with_expert.paligemma.model"
        exn = "paligemma_with_expert.gemma_expert.model"
        cu, roles = b["cu"], b["roles"]
        S, T = len(cu) - 1, int(cu[-1])
        side = c["vision"]["image_size"] // c["vision"]["patch"]
        Ti = side * side
        img_emb = None
        if b["images"].shape[0] > 0:
            feats = self.vit(b["images"])
            img_emb = F.linear(feats.reshape(-1, feats.shape[-1]), self.P(pg + ".multi_modal_projector.linear.weight"),
                               self.P(pg + ".multi_modal_projector.linear.bias"))
        embed = self.P(pg + ".language_model.embed_tokens.weight")
        rows, pre_idx, act_idx, tok_sample = [], [], [], [0] * T
        for s in range(S):
            k_img = 0
            for tkn in range(cu[s], cu[s + 1]):
                tok_sample[tkn] = s
                r = roles[tkn]
                if r == 0:
                    rows.append(img_emb[b["cu_images"][s] * Ti + k_img])
                    k_img += 1
                    pre_idx.append(tkn)
                elif r == 1:
                    rows.append(embed[b["ids"][tkn]] * math.sqrt(W))
                    pre_idx.append(tkn)
                elif r == 3:
                    act_idx.append(tkn)
                else:
                    raise ValueError("role %d" % r)
        assert len(act_idx) == S * Hz
        xp = torch.stack(rows)
        pre_i, act_i = torch.tensor(pre_idx), torch.tensor(act_idx)
        a_seg = torch.arange(S).repeat_interleave(Hz)
        cond = self.time_cond(t)
        xa = F.linear(x_t.reshape(S * Hz, A), self.P("action_in_proj.weight"), self.P("action_in_proj.bias"))
        samp = torch.tensor(tok_sample)
        grp = torch.tensor(b["groups"])
        mask = (samp[:, None] == samp[None, :]) & (grp[None, :] <= grp[:, None])  # [q, k]
        pos = torch.tensor(b["positions"])

        def ada(x, lp):
            mod = F.linear(cond, self.P(lp + ".dense.weight"), self.P(lp + ".dense.bias"))
            scale, shift, gate = mod[:, :We], mod[:, We:2 * We], mod[:, 2 * We:]
            return self.rms(x) * (1 + scale[a_seg]) + shift[a_seg], gate[a_seg]

        for l in range(lm["depth"]):
            lp = "%s.language_model.layers.%d" % (pg, l)
            ep = "%s.layers.%d" % (exn, l)
            pn = self.rms(xp) * (1 + self.P(lp + ".input_layernorm.weight"))
            an, gate_in = ada(xa, ep + ".input_layernorm")

            def qkv(x, p, k):
                return F.linear(x, self.P(p + ".self_attn.%s_proj.weight" % k))

            Q = torch.zeros(T, H * hd, dtype=torch.float64).index_copy(0, pre_i, qkv(pn, lp, "q")).index_copy(
                0, act_i, qkv(an, ep, "q"))
            K = torch.zeros(T, KV * hd, dtype=torch.float64).index_copy(0, pre_i, qkv(pn, lp, "k")).index_copy(
                0, act_i, qkv(an, ep, "k"))
            V = torch.zeros(T, KV * hd, dtype=torch.float64).index_copy(0, pre_i, qkv(pn, lp, "v")).index_copy(
                0, act_i, qkv(an, ep, "v"))
            Q = self.rope(Q.view(T, H, hd), pos)
            K = self.rope(K.view(T, KV, hd), pos).repeat_interleave(H // KV, dim=1)
            V = V.view(T, KV, hd).repeat_interleave(H // KV, dim=1)
            sc = torch.einsum("qhd,khd->hqk", Q, K) / math.sqrt(hd)
            sc = sc.masked_fill(~mask[None], float("-inf"))
            O = torch.einsum("hqk,khd->qhd", torch.softmax(sc, dim=-1), V).reshape(T, H * hd)
            xp = xp + F.linear(O[pre_i], self.P(lp + ".self_attn.o_proj.weight"))
            h = self.rms(xp) * (1 + self.P(lp + ".post_attention_layernorm.weight"))
            xp = xp + self.geglu(h, self.P(lp + ".mlp.gate_proj.weight"), self.P(lp + ".mlp.up_proj.weight"),
                                 self.P(lp + ".mlp.down_proj.weight"))
            xa = xa + F.linear(O[act_i], self.P(ep + ".self_attn.o_proj.weight")) * gate_in
            h, gate_post = ada(xa, ep + ".post_attention_layernorm")
            xa = xa + self.geglu(h, self.P(ep + ".mlp.gate_proj.weight"), self.P(ep + ".mlp.up_proj.weight"),
                                 self.P(ep + ".mlp.down_proj.weight")) * gate_post
        # the LM's final norm would act on xp here; nothing reads it (openpi discards the prefix output)
        af, _ = ada(xa, exn + ".norm")
        v = F.linear(af, self.P("action_out_proj.weight"), self.P("action_out_proj.bias"))
        return v.reshape(S, Hz, A)


def main():
    torch.set_default_dtype(torch.float64)
    t_in, meta = read_safetensors(IN)
    cfg = load_config(meta.get("config", "pi05-nano"))
    params = {k[len("param."):]: torch.tensor(v.astype(np.float64), requires_grad=True)
              for k, v in t_in.items() if k.startswith("param.")}
    model = Pi05(cfg, meta, params)
    b = {
        "cu": [int(x) for x in t_in["batch.cu_seqlens"]],
        "cu_images": [int(x) for x in t_in["batch.cu_images"]],
        "roles": [int(x) for x in t_in["batch.roles"]],
        "positions": t_in["batch.positions"].astype(np.int64),
        "groups": t_in["batch.groups"].astype(np.int64),
        "ids": [int(x) for x in t_in["batch.token_ids"]],
        "images": torch.tensor(t_in["batch.images"].astype(np.float64)),
    }
    actions = torch.tensor(t_in["batch.actions"].astype(np.float64))
    noise = torch.tensor(t_in["flow.noise"].astype(np.float64))
    t = torch.tensor(t_in["flow.t"].astype(np.float64))
    S, Hz, A = actions.shape
    x_t = t[:, None, None] * noise + (1 - t[:, None, None]) * actions
    target = noise - actions
    pad = torch.tensor(t_in["batch.action_is_pad"].astype(bool))
    real = torch.tensor(t_in["batch.real_action_dim"].astype(np.int64))
    m = (~pad)[:, :, None] & (torch.arange(A)[None, None, :] < real[:, None, None])
    m = m.double()
    pred = model.forward(b, x_t, t)
    loss = (m * (pred - target) ** 2).sum() / m.sum()
    loss.backward()
    out = {"loss": np.array([loss.item()]), "pred": pred.detach().numpy()}
    for name, p in params.items():
        g = p.grad if p.grad is not None else torch.zeros_like(p)
        out["grad." + name] = g.numpy()
    with torch.no_grad():
        x = torch.tensor(t_in["sample.noise"].astype(np.float64))
        dt = -1.0 / model.steps
        tt = 1.0
        for _ in range(model.steps):
            v = model.forward(b, x, torch.full((S,), tt))
            x = x + dt * v
            tt += dt
    out["sample.actions"] = x.numpy()
    write_safetensors(OUT, out)
    print("loss %.10f; %d gradients; wrote %s" % (loss.item(), len(params), os.path.relpath(OUT, ROOT)))


if __name__ == "__main__":
    sys.exit(main())
