#!/usr/bin/python3
"""gen_nn_goldens.py — PyTorch reference values for the nn layers (src/nn).

Writes tests/nn/goldens/<layer>.bin: small float32 inputs, outputs and
gradients per layer, computed in float64 from the float32 inputs (fixed
seeds) and cast to float32. tests/nn/test_nn_*.c read them and compare the
C layers against them. Run with Debian's interpreter (python3-torch):

    /usr/bin/python3 tools/gen_nn_goldens.py [out_dir]

File format (little-endian): b"VLAGOLD1", u32 count, then per tensor:
u32 name length, name bytes, u32 dtype (0 = f32, 1 = i32), u32 ndim,
i64 shape[ndim], data.

Each backward uses the loss sum(out * dy) with a random dy that is stored
too, so the gradients are those of that loss.
"""
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "nn", "goldens")


def write(name, tensors):
    path = os.path.join(OUT, name + ".bin")
    with open(path, "wb") as f:
        f.write(b"VLAGOLD1")
        f.write(struct.pack("<I", len(tensors)))
        for key, t in tensors.items():
            a = t.detach().cpu().numpy() if torch.is_tensor(t) else np.asarray(t)
            if a.dtype in (np.float64, np.float32):
                a, code = a.astype(np.float32), 0
            else:
                a, code = a.astype(np.int32), 1
            a = np.ascontiguousarray(a)
            kb = key.encode()
            f.write(struct.pack("<I", len(kb)))
            f.write(kb)
            f.write(struct.pack("<II", code, a.ndim))
            f.write(struct.pack("<%dq" % a.ndim, *a.shape))
            f.write(a.tobytes())
    print("wrote", path, os.path.getsize(path), "bytes")


gen = torch.Generator().manual_seed(1234)


def rand(*shape, scale=1.0):
    """float32-representable values, returned in float64 with grad enabled."""
    x = (torch.randn(*shape, generator=gen, dtype=torch.float32) * scale).double()
    return x.requires_grad_(True)


def backward(out, dy):
    out.backward(dy)


def g(x):
    return x.grad


# ---- linear -----------------------------------------------------------------
def gen_linear():
    x, w, b = rand(5, 7), rand(4, 7), rand(4)
    dy = rand(5, 4).detach()
    y = F.linear(x, w, b)
    backward(y, dy)
    write("linear", dict(x=x, w=w, b=b, dy=dy, y=y, dx=g(x), dw=g(w), db=g(b)))


def gen_embedding():
    ids = torch.tensor([3, 0, 9, 3, 7, 3], dtype=torch.int64)
    table = rand(10, 5)
    dy = rand(6, 5).detach()
    y = F.embedding(ids, table)
    backward(y, dy)
    write("embedding", dict(ids=ids.int(), table=table, dy=dy, y=y, dtable=g(table)))


def gen_layernorm():
    x, w, b = rand(4, 16, scale=2.0), rand(16), rand(16)
    with torch.no_grad():
        x += 0.5
    dy = rand(4, 16).detach()
    y = F.layer_norm(x, (16,), w, b, eps=1e-5)
    backward(y, dy)
    write("layernorm", dict(x=x, w=w, b=b, dy=dy, y=y, dx=g(x), dw=g(w), db=g(b)))


def rms(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def gen_rmsnorm():
    x, w = rand(4, 16, scale=1.5), rand(16, scale=0.5)
    dy = rand(4, 16).detach()
    y = rms(x, 1e-6) * w  # LLaMA/Qwen form
    backward(y, dy)
    t = dict(x=x, w=w, dy=dy, y=y, dx=g(x).clone(), dw=g(w).clone())
    x.grad, w.grad = None, None
    y1 = rms(x, 1e-6) * (1.0 + w)  # Gemma form
    backward(y1, dy)
    t.update(y1=y1, dx1=g(x), dw1=g(w))
    write("rmsnorm", t)


def segments(cu):
    return torch.repeat_interleave(torch.arange(len(cu) - 1), torch.tensor(np.diff(cu)))


def gen_adaln():
    """GR00T AdaLayerNorm: emb = Linear(SiLU(temb)); scale, shift = emb.chunk(2);
    LN(x, no affine, eps 1e-5)·(1 + scale) + shift, per packed sample."""
    cu = [0, 3, 7]
    seg = segments(cu)
    x, temb = rand(7, 8), rand(2, 8)
    lw, lb = rand(16, 8, scale=0.3), rand(16, scale=0.3)
    dy = rand(7, 8).detach()
    emb = F.linear(F.silu(temb), lw, lb)
    scale, shift = emb.chunk(2, dim=1)
    y = F.layer_norm(x, (8,), eps=1e-5) * (1 + scale[seg]) + shift[seg]
    backward(y, dy)
    write("adaln", dict(cu=torch.tensor(cu), x=x, temb=temb, lw=lw, lb=lb, dy=dy, y=y, dx=g(x), dtemb=g(temb),
                        dlw=g(lw), dlb=g(lb)))


def gen_adarmsnorm():
    """π0.5 AdaRMSNorm: mod = Dense(cond) → scale, shift, gate; normed = rms(x)(1+scale)+shift;
    and the gated residual res = x + branch·gate."""
    cu = [0, 4, 5, 9]
    seg = segments(cu)
    x, cond, br = rand(9, 8), rand(3, 6), rand(9, 8)
    lw, lb = rand(24, 6, scale=0.3), rand(24, scale=0.3)
    dy, dres = rand(9, 8).detach(), rand(9, 8).detach()
    mod = F.linear(cond, lw, lb)
    scale, shift, gate = mod.chunk(3, dim=1)
    y = rms(x, 1e-6) * (1 + scale[seg]) + shift[seg]
    res = x + br * gate[seg]
    loss = (y * dy).sum() + (res * dres).sum()
    loss.backward()
    write("adarmsnorm", dict(cu=torch.tensor(cu), x=x, cond=cond, branch=br, lw=lw, lb=lb, dy=dy, dres=dres, y=y,
                             res=res, dx=g(x), dcond=g(cond), dbranch=g(br), dlw=g(lw), dlb=g(lb)))


def gen_activations():
    x = rand(64, scale=3.0)
    dy = rand(64).detach()
    y = F.gelu(x, approximate="tanh")
    backward(y, dy)
    t = dict(x=x, dy=dy, gelu=y, dgelu=g(x).clone())
    x.grad = None
    y = F.silu(x)
    backward(y, dy)
    t.update(silu=y, dsilu=g(x))
    write("activations", t)


def gen_mlp():
    t = {}
    n, d, h = 5, 8, 12
    x = rand(n, d)
    dy = rand(n, d).detach()
    t.update(x=x, dy=dy)
    # plain: down(gelu_tanh(up(x))) with biases
    wu, bu, wd, bd = rand(h, d, scale=0.4), rand(h, scale=0.4), rand(d, h, scale=0.4), rand(d, scale=0.4)
    y = F.linear(F.gelu(F.linear(x, wu, bu), approximate="tanh"), wd, bd)
    backward(y, dy)
    t.update(p_wu=wu, p_bu=bu, p_wd=wd, p_bd=bd, p_y=y, p_dx=g(x).clone(), p_dwu=g(wu), p_dbu=g(bu), p_dwd=g(wd),
             p_dbd=g(bd))
    for tag, act in (("geglu", lambda z: F.gelu(z, approximate="tanh")), ("swiglu", F.silu)):
        x.grad = None
        wg, wu, wd = rand(h, d, scale=0.4), rand(h, d, scale=0.4), rand(d, h, scale=0.4)
        y = F.linear(act(F.linear(x, wg)) * F.linear(x, wu), wd)
        backward(y, dy)
        t.update({tag + "_wg": wg, tag + "_wu": wu, tag + "_wd": wd, tag + "_y": y, tag + "_dx": g(x).clone(),
                  tag + "_dwg": g(wg), tag + "_dwu": g(wu), tag + "_dwd": g(wd)})
    write("mlp", t)


def gen_rope():
    n, heads, hd, theta = 6, 2, 8, 10000.0
    pos = torch.tensor([0, 1, 2, 0, 1, 37])
    x = rand(n, heads, hd)
    dy = rand(n, heads, hd).detach()
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = pos.double()[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None, :]
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    rot = torch.cat([-x2, x1], -1)
    y = x * cos + rot * sin
    backward(y, dy)
    write("rope", dict(pos=pos.int(), x=x, dy=dy, y=y, dx=g(x)))


def gen_time_embedding():
    t = {}
    dim = 16
    half = dim // 2
    k = torch.arange(half, dtype=torch.float64)
    # GR00T action encoder: exp(-k ln(10000)/half), sin ‖ cos, discretised timesteps
    ts = rand(3, scale=1.0)
    with torch.no_grad():
        ts.copy_(torch.tensor([0.0, 17.0, 999.0]))
    f = torch.exp(-k * math.log(10000.0) / half)
    a = ts[:, None] * f[None]
    y = torch.cat([a.sin(), a.cos()], -1)
    dy = rand(3, dim).detach()
    backward(y, dy)
    t.update(g_t=ts, g_dy=dy, g_y=y, g_dt=g(ts))
    # diffusers Timesteps(flip_sin_to_cos=True, downscale_freq_shift=1): cos ‖ sin
    ts2 = rand(3)
    with torch.no_grad():
        ts2.copy_(torch.tensor([1.0, 250.0, 640.0]))
    f = torch.exp(-math.log(10000.0) * k / (half - 1.0))
    a = ts2[:, None] * f[None]
    y = torch.cat([a.cos(), a.sin()], -1)
    backward(y, dy)
    t.update(d_t=ts2, d_y=y, d_dt=g(ts2))
    # openpi posemb_sincos(min_period 4e-3, max_period 4.0): flow time in [0, 1]
    ts3 = rand(3)
    with torch.no_grad():
        ts3.copy_(torch.tensor([0.001, 0.5, 0.999]).float().double())
    frac = torch.linspace(0.0, 1.0, half, dtype=torch.float64)
    period = 4e-3 * (4.0 / 4e-3) ** frac
    a = ts3[:, None] * (2 * math.pi / period)[None]
    y = torch.cat([a.sin(), a.cos()], -1)
    backward(y, dy)
    t.update(p_t=ts3, p_y=y, p_dt=g(ts3))
    write("time_embedding", t)


def gen_patch_embed():
    img = rand(2, 3, 8, 8)
    w, b = rand(5, 3, 4, 4, scale=0.3), rand(5)
    y = F.conv2d(img, w, b, stride=4).flatten(2).transpose(1, 2).reshape(-1, 5)
    dy = rand(*y.shape).detach()
    backward(y, dy)
    write("patch_embed", dict(img=img, w=w, b=b, dy=dy, y=y, dimg=g(img), dw=g(w), db=g(b)))


def gen_embodiment_linear():
    """GR00T CategorySpecificLinear: W[cat] is [in, out]; out = x·W[cat] + b[cat]."""
    cu = [0, 2, 3, 7]
    ids = torch.tensor([3, 1, 3])
    seg = segments(cu)
    x, w, b = rand(7, 3), rand(4, 3, 5), rand(4, 5)
    dy = rand(7, 5).detach()
    y = torch.bmm(x[:, None, :], w[ids[seg]])[:, 0, :] + b[ids[seg]]
    backward(y, dy)
    write("embodiment_linear", dict(cu=torch.tensor(cu), ids=ids, x=x, w=w, b=b, dy=dy, y=y, dx=g(x), dw=g(w),
                                    db=g(b)))


# ---- attention ----------------------------------------------------------------
def dense_attention(q, k, v, mask, n_rep, scale):
    """LeRobot/openpi eager path: repeat_kv, QKᵀ·scale + additive mask, softmax, @V.
    q [N, H, d], k/v [M, Hkv, d], mask [N, M] bool (True = may attend)."""
    kr = k.repeat_interleave(n_rep, dim=1)
    vr = v.repeat_interleave(n_rep, dim=1)
    s = torch.einsum("nhd,mhd->hnm", q, kr) * scale
    s = s + torch.where(mask, 0.0, float("-inf")).to(s.dtype)[None]
    p = torch.softmax(s, dim=-1)
    p = torch.nan_to_num(p, nan=0.0)
    return torch.einsum("hnm,mhd->nhd", p, vr)


def pack_mask(cu_q, cu_k, group_q, group_k):
    sq, sk = segments(cu_q), segments(cu_k)
    return (sq[:, None] == sk[None, :]) & (group_k[None, :] <= group_q[:, None])


def gen_attention():
    lens = [13, 29, 7]
    cu = [0] + list(np.cumsum(lens))
    n = cu[-1]
    H, Hkv, d = 4, 2, 8
    pos = torch.cat([torch.arange(L) for L in lens])
    prefix = [9, 20, 4]  # prefix-LM: first tokens group 0, the rest group 1
    pl = torch.cat([(torch.arange(L) >= p).long() for L, p in zip(lens, prefix)])
    for tag, grp in (("bidir", torch.zeros(n, dtype=torch.long)), ("causal", pos), ("prefix", pl)):
        q, k, v = rand(n, H, d), rand(n, Hkv, d), rand(n, Hkv, d)
        dy = rand(n, H, d).detach()
        y = dense_attention(q, k, v, pack_mask(cu, cu, grp, grp), H // Hkv, 1.0 / math.sqrt(d))
        backward(y, dy)
        write("attention_" + tag, dict(cu=torch.tensor(cu), group=grp, q=q, k=k, v=v, dy=dy, y=y, dq=g(q), dk=g(k),
                                       dv=g(v)))
    # cross-attention, MQA: queries of one pack against keys/values of another
    lq, lk = [4, 6, 3], [7, 2, 9]
    cq, ck = [0] + list(np.cumsum(lq)), [0] + list(np.cumsum(lk))
    H, Hkv = 4, 1
    q, k, v = rand(cq[-1], H, d), rand(ck[-1], Hkv, d), rand(ck[-1], Hkv, d)
    dy = rand(cq[-1], H, d).detach()
    zq, zk = torch.zeros(cq[-1], dtype=torch.long), torch.zeros(ck[-1], dtype=torch.long)
    y = dense_attention(q, k, v, pack_mask(cq, ck, zq, zk), H, 1.0 / math.sqrt(d))
    backward(y, dy)
    write("attention_cross", dict(cu_q=torch.tensor(cq), cu_k=torch.tensor(ck), q=q, k=k, v=v, dy=dy, y=y, dq=g(q),
                                  dk=g(k), dv=g(v)))


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for fn in (gen_linear, gen_embedding, gen_layernorm, gen_rmsnorm, gen_adaln, gen_adarmsnorm, gen_activations,
               gen_mlp, gen_rope, gen_time_embedding, gen_patch_embed, gen_embodiment_linear, gen_attention):
        fn()
