#!/usr/bin/python3
"""ref_groot.py — plain PyTorch (float64, CPU) reference of vla.c's GR00T-N1.5-style
policy, for tests/policy/test_groot.c.

Reads  tests/policy/goldens/groot_nano_inputs.safetensors   (written by the C test with
       VLA_GROOT_WRITE_GOLDEN=1: every weight by checkpoint name, one packed batch, the
       flow time/noise C drew, and the initial noise for sampling)
writes tests/policy/goldens/groot_nano_expected.safetensors  (loss, the gradient of every
       parameter as "grad.<name>", sampled actions).

The model is written the PyTorch way, independently of the C code's structure: nn.Modules
named as Isaac-GR00T N1.5's state_dict (the weights load with strict=True), each sample run
alone (no packing) with dense masked attention, autograd for the gradients. Architecture as
in Isaac-GR00T N1.5 (lerobot v0.5.1 src/lerobot/policies/groot/):
  SigLIP ViT (pixels 2x-1, conv patches + learned positions, pre-LN blocks, GELU-tanh MLP,
  post-LN) -> mlp1 Linear -> image rows of the Qwen3 input (text rows: token embedding);
  Qwen3 layers (RMSNorm, q/k/v/o without bias, per-head q_norm/k_norm RMSNorm, RoPE
  rotate-half, GQA, causal, SwiGLU), cut after language.depth layers, final RMSNorm;
  action head: vlln LayerNorm -> vl_self_attention (BasicTransformerBlocks with affine LNs);
  DiT with AdaLayerNorm (scale, shift = Linear(silu(temb)).chunk(2)), even blocks cross-attend
  to the VL tokens, odd blocks self-attend, FeedForward gelu-approximate, norm_out +
  (shift, scale) = proj_out_1(silu(temb)), proj_out_2; CategorySpecificLinear/MLP encoders and
  decoder; GR00T flow matching (x_t = (1-t) noise + t action, target = action - noise,
  loss = sum(mask * err^2) / sum(mask)); sampling = 4 Euler steps at t = k/4.

Run with Debian's interpreter: /usr/bin/python3 tools/ref_groot.py
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IN = os.path.join(ROOT, "tests/policy/goldens/groot_nano_inputs.safetensors")
OUT = os.path.join(ROOT, "tests/policy/goldens/groot_nano_expected.safetensors")

# ---- safetensors by hand: u64 header length, JSON header, data ----------------------------

DT = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64, "U8": np.uint8}


def st_read(path):
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    data = buf[8 + n:]
    out = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=DT[h["dtype"]]).reshape(h["shape"]).copy()
    return out, meta


def st_write(path, tensors, meta=None):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype=np.float32)
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    os.replace(tmp, path)


# ---- config (defaults as src/policy/config.c) ---------------------------------------------


def load_config(name):
    with open(os.path.join(ROOT, "configs", name + ".json")) as f:
        c = json.load(f)
    c["vision"].setdefault("norm_eps", 1e-6)
    c["language"].setdefault("norm_eps", 1e-6)
    return c


# ---- building blocks ----------------------------------------------------------------------


def attention(q, k, v, mask=None):
    """q [Nq, H, d], k/v [Nk, Hkv, d] -> [Nq, H*d]; GQA as HF repeat_kv; mask: bool [Nq, Nk]."""
    H, Hkv, d = q.shape[1], k.shape[1], q.shape[2]
    if Hkv != H:
        k = k.repeat_interleave(H // Hkv, dim=1)
        v = v.repeat_interleave(H // Hkv, dim=1)
    s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(d)
    if mask is not None:
        s = s.masked_fill(~mask[None], float("-inf"))
    p = torch.softmax(s, dim=-1)
    return torch.einsum("hqk,khd->qhd", p, v).reshape(q.shape[0], H * d)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SiglipAttn(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.k_proj, self.v_proj, self.q_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))
        self.heads = heads

    def forward(self, x):
        n, d = x.shape
        hd = d // self.heads
        q = self.q_proj(x).view(n, self.heads, hd)
        k = self.k_proj(x).view(n, self.heads, hd)
        v = self.v_proj(x).view(n, self.heads, hd)
        return self.out_proj(attention(q, k, v))


class SiglipMLP(nn.Module):
    def __init__(self, d, m):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, m), nn.Linear(m, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class SiglipLayer(nn.Module):
    def __init__(self, v):
        super().__init__()
        d = v["width"]
        self.layer_norm1 = nn.LayerNorm(d, eps=v["norm_eps"])
        self.self_attn = SiglipAttn(d, v["heads"])
        self.layer_norm2 = nn.LayerNorm(d, eps=v["norm_eps"])
        self.mlp = SiglipMLP(d, v["mlp"])

    def forward(self, x):
        x = x + self.self_attn(self.layer_norm1(x))
        return x + self.mlp(self.layer_norm2(x))


class SiglipEmbeddings(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.patch_embedding = nn.Conv2d(v["channels"], v["width"], v["patch"], stride=v["patch"])
        self.position_embedding = nn.Embedding((v["image_size"] // v["patch"]) ** 2, v["width"])

    def forward(self, img):  # [C, H, W] in [0, 1]
        x = self.patch_embedding((2 * img - 1)[None])[0]  # [D, h, w]
        x = x.flatten(1).transpose(0, 1)
        return x + self.position_embedding.weight


class SiglipEncoder(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.layers = nn.ModuleList(SiglipLayer(v) for _ in range(v["depth"]))


class SiglipVisionTransformer(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.embeddings = SiglipEmbeddings(v)
        self.encoder = SiglipEncoder(v)
        self.post_layernorm = nn.LayerNorm(v["width"], eps=v["norm_eps"])

    def forward(self, img):
        x = self.embeddings(img)
        for layer in self.encoder.layers:
            x = layer(x)
        return self.post_layernorm(x)


class SiglipVisionModel(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.vision_model = SiglipVisionTransformer(v)


def rope(x, pos, theta):
    """x [n, h, d] rotate-half RoPE at integer positions."""
    d = x.shape[-1]
    inv = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    a = pos[:, None].double() * inv[None]  # [n, d/2]
    cos = torch.cat([a.cos(), a.cos()], -1)[:, None]
    sin = torch.cat([a.sin(), a.sin()], -1)[:, None]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Qwen3Attn(nn.Module):
    def __init__(self, l):
        super().__init__()
        w, H, Hk, hd = l["width"], l["heads"], l["kv_heads"], l["head_dim"]
        self.q_proj = nn.Linear(w, H * hd, bias=False)
        self.k_proj = nn.Linear(w, Hk * hd, bias=False)
        self.v_proj = nn.Linear(w, Hk * hd, bias=False)
        self.o_proj = nn.Linear(H * hd, w, bias=False)
        self.q_norm = RMSNorm(hd, l["norm_eps"])
        self.k_norm = RMSNorm(hd, l["norm_eps"])
        self.H, self.Hk, self.hd, self.theta = H, Hk, hd, l["rope_theta"]

    def forward(self, x, pos):
        n = x.shape[0]
        q = self.q_norm(self.q_proj(x).view(n, self.H, self.hd))
        k = self.k_norm(self.k_proj(x).view(n, self.Hk, self.hd))
        v = self.v_proj(x).view(n, self.Hk, self.hd)
        q, k = rope(q, pos, self.theta), rope(k, pos, self.theta)
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        return self.o_proj(attention(q, k, v, causal))


class Qwen3MLP(nn.Module):
    def __init__(self, l):
        super().__init__()
        self.gate_proj = nn.Linear(l["width"], l["mlp"], bias=False)
        self.up_proj = nn.Linear(l["width"], l["mlp"], bias=False)
        self.down_proj = nn.Linear(l["mlp"], l["width"], bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Qwen3Layer(nn.Module):
    def __init__(self, l):
        super().__init__()
        self.input_layernorm = RMSNorm(l["width"], l["norm_eps"])
        self.self_attn = Qwen3Attn(l)
        self.post_attention_layernorm = RMSNorm(l["width"], l["norm_eps"])
        self.mlp = Qwen3MLP(l)

    def forward(self, x, pos):
        x = x + self.self_attn(self.input_layernorm(x), pos)
        return x + self.mlp(self.post_attention_layernorm(x))


class Qwen3Model(nn.Module):
    def __init__(self, l):
        super().__init__()
        self.embed_tokens = nn.Embedding(l["vocab"], l["width"])
        self.layers = nn.ModuleList(Qwen3Layer(l) for _ in range(l["depth"]))  # cut at select_layer
        self.norm = RMSNorm(l["width"], l["norm_eps"])

    def forward(self, x, pos):
        for layer in self.layers:
            x = layer(x, pos)
        return self.norm(x)  # hidden_states[-1] of the cut model


class Qwen3ForCausalLM(nn.Module):
    def __init__(self, l):
        super().__init__()
        self.model = Qwen3Model(l)


class EagleModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.vision_model = SiglipVisionModel(c["vision"])
        self.mlp1 = nn.Sequential(nn.Linear(c["vision"]["width"], c["language"]["width"]))
        self.language_model = Qwen3ForCausalLM(c["language"])


class EagleBackbone(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.eagle_model = EagleModel(c)

    def forward(self, images, roles, token_ids):
        """One sample: images [k, C, H, W]; roles/token_ids over its prefix tokens (image, text)."""
        em = self.eagle_model
        img_rows = [em.mlp1(em.vision_model.vision_model(im)) for im in images]
        img = torch.cat(img_rows, 0) if img_rows else None
        txt = em.language_model.model.embed_tokens(token_ids)
        rows, ii, ti = [], 0, 0
        for r in roles.tolist():
            if r == 0:
                rows.append(img[ii]); ii += 1
            else:
                rows.append(txt[ti]); ti += 1
        x = torch.stack(rows, 0)
        pos = torch.arange(x.shape[0])
        return em.language_model.model(x, pos)


class DiffusersAttention(nn.Module):
    def __init__(self, dim, heads, head_dim, kv_dim):
        super().__init__()
        inner = heads * head_dim
        self.to_q = nn.Linear(dim, inner)
        self.to_k = nn.Linear(kv_dim, inner)
        self.to_v = nn.Linear(kv_dim, inner)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim)])
        self.heads, self.head_dim = heads, head_dim

    def forward(self, x, enc=None):
        kv = x if enc is None else enc
        q = self.to_q(x).view(x.shape[0], self.heads, self.head_dim)
        k = self.to_k(kv).view(kv.shape[0], self.heads, self.head_dim)
        v = self.to_v(kv).view(kv.shape[0], self.heads, self.head_dim)
        return self.to_out[0](attention(q, k, v))  # no encoder_attention_mask, as GR00T


class GELUProj(nn.Module):
    def __init__(self, d, inner):
        super().__init__()
        self.proj = nn.Linear(d, inner)

    def forward(self, x):
        return F.gelu(self.proj(x), approximate="tanh")


class FeedForward(nn.Module):
    def __init__(self, d, mult):
        super().__init__()
        self.net = nn.ModuleList([GELUProj(d, mult * d), nn.Identity(), nn.Linear(mult * d, d)])

    def forward(self, x):
        return self.net[2](self.net[0](x))


class AdaLayerNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.linear = nn.Linear(d, 2 * d)
        self.norm = nn.LayerNorm(d, eps=1e-5, elementwise_affine=False)

    def forward(self, x, temb):
        scale, shift = self.linear(F.silu(temb)).chunk(2, dim=-1)
        return self.norm(x) * (1 + scale) + shift


class BasicTransformerBlock(nn.Module):
    def __init__(self, dim, heads, head_dim, kv_dim, mult, ada):
        super().__init__()
        self.ada = ada
        self.norm1 = AdaLayerNorm(dim) if ada else nn.LayerNorm(dim, eps=1e-5)
        self.attn1 = DiffusersAttention(dim, heads, head_dim, kv_dim)
        self.norm3 = nn.LayerNorm(dim, eps=1e-5, elementwise_affine=not ada)
        self.ff = FeedForward(dim, mult)

    def forward(self, x, enc=None, temb=None):
        h = self.norm1(x, temb) if self.ada else self.norm1(x)
        x = x + self.attn1(h, enc)
        return x + self.ff(self.norm3(x))


class SelfAttentionTransformer(nn.Module):
    def __init__(self, h, width):
        super().__init__()
        self.transformer_blocks = nn.ModuleList(
            BasicTransformerBlock(width, h["vl_heads"], h["vl_head_dim"], width, h["ff_mult"], False)
            for _ in range(h["vl_layers"]))

    def forward(self, x):
        for b in self.transformer_blocks:
            x = b(x)
        return x


def sinusoid(t, dim, shift, cos_first):
    """diffusers get_timestep_embedding / GR00T SinusoidalPositionalEncoding for scalar t."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float64) / (half - shift))
    a = t * freqs
    return torch.cat([a.cos(), a.sin()] if cos_first else [a.sin(), a.cos()], -1)


class TimestepEmbedding(nn.Module):
    def __init__(self, cin, d):
        super().__init__()
        self.linear_1, self.linear_2 = nn.Linear(cin, d), nn.Linear(d, d)

    def forward(self, x):
        return self.linear_2(F.silu(self.linear_1(x)))


class TimestepEncoder(nn.Module):
    def __init__(self, cin, d):
        super().__init__()
        self.timestep_embedder = TimestepEmbedding(cin, d)
        self.cin = cin

    def forward(self, bucket):
        return self.timestep_embedder(sinusoid(bucket, self.cin, 1.0, True))


class DiT(nn.Module):
    def __init__(self, h, lm_width):
        super().__init__()
        D = h["dit_heads"] * h["dit_head_dim"]
        self.timestep_encoder = TimestepEncoder(h["timestep_channels"], D)
        self.transformer_blocks = nn.ModuleList(
            BasicTransformerBlock(D, h["dit_heads"], h["dit_head_dim"], lm_width if i % 2 == 0 else D, h["ff_mult"], True)
            for i in range(h["dit_layers"]))
        self.norm_out = nn.LayerNorm(D, eps=1e-6, elementwise_affine=False)
        self.proj_out_1 = nn.Linear(D, 2 * D)
        self.proj_out_2 = nn.Linear(D, h["output_dim"])

    def forward(self, x, vl, bucket):
        temb = self.timestep_encoder(bucket)
        for i, b in enumerate(self.transformer_blocks):
            x = b(x, vl if i % 2 == 0 else None, temb)  # interleave_self_attention: even = cross
        shift, scale = self.proj_out_1(F.silu(temb)).chunk(2, dim=-1)
        return self.proj_out_2(self.norm_out(x) * (1 + scale) + shift)


class CategorySpecificLinear(nn.Module):
    def __init__(self, n, i, o):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(n, i, o))
        self.b = nn.Parameter(torch.zeros(n, o))

    def forward(self, x, cat):
        return x @ self.W[cat] + self.b[cat]


class CategorySpecificMLP(nn.Module):
    def __init__(self, n, i, hid, o):
        super().__init__()
        self.layer1, self.layer2 = CategorySpecificLinear(n, i, hid), CategorySpecificLinear(n, hid, o)

    def forward(self, x, cat):
        return self.layer2(F.relu(self.layer1(x, cat)), cat)


class MultiEmbodimentActionEncoder(nn.Module):
    def __init__(self, n, adim, D):
        super().__init__()
        self.W1 = CategorySpecificLinear(n, adim, D)
        self.W2 = CategorySpecificLinear(n, 2 * D, D)
        self.W3 = CategorySpecificLinear(n, D, D)
        self.D = D

    def forward(self, a, bucket, cat):
        tau = sinusoid(bucket, self.D, 0.0, False).expand(a.shape[0], -1)
        x = torch.cat([self.W1(a, cat), tau], -1)
        return self.W3(F.silu(self.W2(x, cat)), cat)


class FlowmatchingActionHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, L = c["action_head"], c["language"]["width"]
        D = h["dit_heads"] * h["dit_head_dim"]
        n = h["embodiments"]
        self.model = DiT(h, L)
        self.state_encoder = CategorySpecificMLP(n, c["action"]["state_dim"], h["state_hidden"], D)
        self.action_encoder = MultiEmbodimentActionEncoder(n, c["action"]["dim"], D)
        self.action_decoder = CategorySpecificMLP(n, h["output_dim"], h["output_dim"], c["action"]["dim"])
        self.future_tokens = nn.Embedding(h["future_tokens"], D)
        self.vlln = nn.LayerNorm(L, eps=1e-5)
        self.vl_self_attention = SelfAttentionTransformer(h, L)
        self.position_embedding = nn.Embedding(h["max_seq_len"], D)
        self.H = c["action"]["horizon"]

    def velocity(self, vl, state, x_t, bucket, cat):
        s = self.state_encoder(state[None], cat)
        a = self.action_encoder(x_t, bucket, cat) + self.position_embedding.weight[: x_t.shape[0]]
        seq = torch.cat([s, self.future_tokens.weight, a], 0)
        out = self.model(seq, vl, bucket)
        return self.action_decoder(out, cat)[-self.H:]


class GR00T(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.backbone = EagleBackbone(c)
        self.action_head = FlowmatchingActionHead(c)

    def vl_features(self, images, roles, token_ids):
        ah = self.action_head
        return ah.vl_self_attention(ah.vlln(self.backbone(images, roles, token_ids)))


def main():
    torch.set_default_dtype(torch.float64)
    inp, meta = st_read(IN)
    c = load_config(meta.get("config", "groot-nano"))
    m = GR00T(c).double()
    sd = {k: torch.from_numpy(v.astype(np.float64)) for k, v in inp.items()
          if k.split(".")[0] not in ("batch", "flow", "sample")}
    m.load_state_dict(sd, strict=True)  # the names and shapes of param_spec.c are GR00T's

    cu = inp["batch.cu_seqlens"]
    S = len(cu) - 1
    roles, tok = inp["batch.roles"], inp["batch.token_ids"]
    cu_img, images = inp["batch.cu_images"], inp["batch.images"]
    v = c["vision"]
    images = torch.from_numpy(images.astype(np.float64)).view(-1, v["channels"], v["image_size"], v["image_size"])
    state = torch.from_numpy(inp["batch.state"].astype(np.float64))
    actions = torch.from_numpy(inp["batch.actions"].astype(np.float64))
    pad, rdim, emb = inp["batch.action_is_pad"], inp["batch.real_action_dim"], inp["batch.embodiment"]
    t = torch.from_numpy(inp["flow.t"].astype(np.float64))
    bucket = inp["flow.bucket"]
    noise = torch.from_numpy(inp["flow.noise"].astype(np.float64))
    H, ad = actions.shape[1], actions.shape[2]

    def prefix_of(s):
        """One sample's images, prefix roles (0 image, 1 text) and text token ids."""
        r, tk = roles[cu[s]:cu[s + 1]], tok[cu[s]:cu[s + 1]]
        keep = (r == 0) | (r == 1)
        return (images[cu_img[s]:cu_img[s + 1]], torch.from_numpy(r[keep].astype(np.int64)),
                torch.from_numpy(tk[r == 1].astype(np.int64)))

    num, den = 0.0, 0.0
    for s in range(S):
        ims, r, ids = prefix_of(s)
        vl = m.vl_features(ims, r, ids)
        x_t = (1 - t[s]) * noise[s] + t[s] * actions[s]
        target = actions[s] - noise[s]
        pred = m.action_head.velocity(vl, state[s], x_t, float(bucket[s]), int(emb[s]))
        mask = torch.zeros(H, ad)
        for h in range(H):
            if not pad[s, h]:
                mask[h, : rdim[s]] = 1
        num = num + (mask * (pred - target) ** 2).sum()
        den += float(mask.sum())
    loss = num / den
    loss.backward()
    out = {"loss": np.array([loss.item()])}
    for name, p in m.named_parameters():
        out["grad." + name] = (p.grad if p.grad is not None else torch.zeros_like(p)).numpy()

    # sampling: VL features once, Euler at t_k = k/steps from the exported noise
    steps = c["flow"]["steps"]
    x0 = torch.from_numpy(inp["sample.noise"].astype(np.float64))
    acts = []
    with torch.no_grad():
        for s in range(S):
            ims, r, ids = prefix_of(s)
            vl = m.vl_features(ims, r, ids)
            x = x0[s].clone()
            for k in range(steps):
                tk = k / steps
                b = float(int(np.float32(tk) * np.float32(1000)))
                x = x + (1.0 / steps) * m.action_head.velocity(vl, state[s], x, b, int(emb[s]))
            acts.append(x.numpy())
    out["sample.actions"] = np.stack(acts, 0)
    st_write(OUT, out, {"generator": "tools/ref_groot.py", "torch": torch.__version__})
    print(f"loss {loss.item():.9g}; {len(out) - 2} gradients; wrote {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
