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


# ---- the transformer block (src/nn/block.h) ---------------------------------------
def rope(x, pos, theta):
    hd = x.shape[-1]
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = pos.double()[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None, :]
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def block_norm(kind, x, w, b, seg, cond, eps):
    """norm output and (for AdaRMS) the gate, as the models define them."""
    if kind == "layer":
        return F.layer_norm(x, (x.shape[-1],), w, b, eps), None
    if kind == "layer_plain":
        return F.layer_norm(x, (x.shape[-1],), eps=eps), None
    if kind == "rms":
        return rms(x, eps) * w, None
    if kind == "rms_1p":
        return rms(x, eps) * (1 + w), None
    mod = F.linear(cond, w, b)
    if kind == "adarms":  # openpi gemma.py: scale, shift, gate
        scale, shift, gate = mod.chunk(3, dim=1)
        return rms(x, eps) * (1 + scale[seg]) + shift[seg], gate[seg]
    scale, shift = mod.chunk(2, dim=1)  # GR00T AdaLayerNorm
    return F.layer_norm(x, (x.shape[-1],), eps=eps) * (1 + scale[seg]) + shift[seg], None


BLOCK_CASES = {
    # name: norm1, norm2, heads, kv heads, head_dim, biases, qk_norm, rope, cross, mlp, groups
    "vit": dict(n1="layer", n2="layer", H=4, Hk=4, hd=4, bias=True, qkn=False, rope=0.0, cross=False, mlp="gelu",
                grp="bidir"),
    "gemma": dict(n1="rms_1p", n2="rms_1p", H=4, Hk=1, hd=4, bias=False, qkn=False, rope=10000.0, cross=False,
                  mlp="geglu", grp="prefix"),
    "qwen3": dict(n1="rms", n2="rms", H=4, Hk=2, hd=4, bias=False, qkn=True, rope=1e6, cross=False, mlp="swiglu",
                  grp="causal"),
    "adarms": dict(n1="adarms", n2="adarms", H=2, Hk=1, hd=8, bias=False, qkn=False, rope=10000.0, cross=False,
                   mlp="geglu", grp="prefix"),
    "dit": dict(n1="adaln", n2="layer_plain", H=2, Hk=2, hd=8, bias=True, qkn=False, rope=0.0, cross=True,
                mlp="gelu", grp="bidir"),
}


def gen_block():
    """x_mid = x + R1(o(attn(norm1 x))), x_out = x_mid + R2(mlp(norm2 x_mid)), per BLOCK_CASES;
    the loss is sum(x_out · dy); every input and weight gets its gradient."""
    lens, ctx_lens = [5, 9, 3], [6, 2, 7]
    cu, cuc = [0] + list(np.cumsum(lens)), [0] + list(np.cumsum(ctx_lens))
    n, nc, S, D, Dc, Dkv, M, eps = cu[-1], cuc[-1], len(lens), 16, 12, 10, 24, 1e-6
    seg = segments(cu)
    pos = torch.cat([torch.arange(L) for L in lens])
    grps = dict(bidir=torch.zeros(n, dtype=torch.long), causal=pos,
                prefix=torch.cat([(torch.arange(L) >= L // 2).long() for L in lens]))
    for name, c in BLOCK_CASES.items():
        H, Hk, hd = c["H"], c["Hk"], c["hd"]
        Q, K = H * hd, Hk * hd
        t = dict(cu=torch.tensor(cu), cu_ctx=torch.tensor(cuc), pos=pos.int(), groups=grps[c["grp"]].int())
        x, cond, ctx = rand(n, D), rand(S, Dc), rand(nc, Dkv)
        t.update(x=x, cond=cond, ctx=ctx)
        w = {}

        def param(key, *shape, scale=0.3, offset=0.0):
            w[key] = rand(*shape, scale=scale)
            with torch.no_grad():
                w[key] += offset
            return w[key]

        def norm_params(tag, kind):
            if kind == "layer":
                return param(tag + "_w", D, offset=1.0), param(tag + "_b", D)
            if kind in ("rms", "rms_1p"):
                return param(tag + "_w", D, offset=1.0 if kind == "rms" else 0.0), None
            if kind in ("adarms", "adaln"):
                k = 3 if kind == "adarms" else 2
                return param(tag + "_w", k * D, Dc, scale=0.2), param(tag + "_b", k * D, scale=0.2)
            return None, None

        n1w, n1b = norm_params("norm1", c["n1"])
        kv_in = Dkv if c["cross"] else D
        qw, kw, vw, ow = param("q_w", Q, D), param("k_w", K, kv_in), param("v_w", K, kv_in), param("o_w", D, Q)
        qb = kb = vb = ob = None
        if c["bias"]:
            qb, kb, vb, ob = param("q_b", Q), param("k_b", K), param("v_b", K), param("o_b", D)
        n2w, n2b = norm_params("norm2", c["n2"])
        uw, dw = param("up_w", M, D), param("down_w", D, M)
        gw = param("gate_w", M, D) if c["mlp"] != "gelu" else None
        ub = db = None
        if c["mlp"] == "gelu" and c["bias"]:
            ub, db = param("up_b", M), param("down_b", D)
        if c["qkn"]:
            param("q_norm", hd, offset=1.0), param("k_norm", hd, offset=1.0)

        h1, gate1 = block_norm(c["n1"], x, n1w, n1b, seg, cond, eps)
        src = ctx if c["cross"] else h1
        q = F.linear(h1, qw, qb).view(n, H, hd)
        k = F.linear(src, kw, kb).view(-1, Hk, hd)
        v = F.linear(src, vw, vb).view(-1, Hk, hd)
        if c["qkn"]:
            q, k = rms(q, eps) * w["q_norm"], rms(k, eps) * w["k_norm"]
        if c["rope"] > 0:
            q, k = rope(q, pos, c["rope"]), rope(k, pos, c["rope"])
        g_ = grps[c["grp"]]
        mask = pack_mask(cu, cuc, torch.zeros(n, dtype=torch.long), torch.zeros(nc, dtype=torch.long)) \
            if c["cross"] else pack_mask(cu, cu, g_, g_)
        att = dense_attention(q, k, v, mask, H // Hk, 1.0 / math.sqrt(hd)).reshape(n, Q)
        y1 = F.linear(att, ow, ob)
        xm = x + (y1 * gate1 if gate1 is not None else y1)
        h2, gate2 = block_norm(c["n2"], xm, n2w, n2b, seg, cond, eps)
        if c["mlp"] == "gelu":
            y2 = F.linear(F.gelu(F.linear(h2, uw, ub), approximate="tanh"), dw, db)
        else:
            act = (lambda z: F.gelu(z, approximate="tanh")) if c["mlp"] == "geglu" else F.silu
            y2 = F.linear(act(F.linear(h2, gw)) * F.linear(h2, uw), dw)
        out = xm + (y2 * gate2 if gate2 is not None else y2)
        dy = rand(n, D).detach()
        backward(out, dy)
        zero_if_unused = lambda a: g(a) if g(a) is not None else torch.zeros_like(a)  # noqa: E731
        t.update(dy=dy, y=out, dx=g(x), dcond=zero_if_unused(cond), dctx=zero_if_unused(ctx))
        for key, val in w.items():
            t[key] = val
            t["d_" + key] = g(val)
        write("block_" + name, t)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for fn in (gen_linear, gen_embedding, gen_layernorm, gen_rmsnorm, gen_adaln, gen_adarmsnorm, gen_activations,
               gen_mlp, gen_rope, gen_time_embedding, gen_patch_embed, gen_embodiment_linear, gen_attention,
               gen_block):
        fn()
