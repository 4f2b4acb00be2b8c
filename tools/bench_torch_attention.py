#!/usr/bin/python3
"""bench_torch_attention.py — the PyTorch peer of `vla bench attention`.

On a CPU (--device cpu, the default): the dense-mask attention a PyTorch
π0.5 port runs (openpi's PI0Pytorch and LeRobot's pi05 build a 4-D boolean
mask with make_att_2d_masks and call eager attention): samples padded to the
longest, K/V repeated to every query head (HF repeat_kv), scores =
Q·Kᵀ·scale with the mask applied (openpi fills with -2.3819763e38), softmax
in float32, P·V; then backward from a fixed random dO. Prefix tokens
(group 0) see the prefix, suffix tokens (group 1) see everything of their
sample; no token sees another sample or padding. Debian's torch 1.13 has no
fused attention on CPU. Prints one JSON line:
  {"bench":"attention_peer","fwd_bwd_ms":…,"fwd_ms":…,"tokens":…,"padded_tokens":…,"torch":…}

On a GPU (--device cuda, bf16 unless --dtype says otherwise; issue 41's fair
anchor): the same layout through every way PyTorch offers, each timed with
CUDA events, forward and forward+backward, best of --reps:
  eager_dense     the composite above (what the ports run);
  sdpa_efficient, sdpa_cudnn, sdpa_math
                  F.scaled_dot_product_attention with the boolean mask,
                  K/V shared by the query heads (enable_gqa; expanded when a
                  backend refuses it), under sdpa_kernel(backend);
  flash_varlen    the mask decomposed into two non-causal ragged calls —
                  prefix queries on prefix keys, suffix queries on the whole
                  sample — through torch.nn.attention.varlen.varlen_attn
                  (FlashAttention's varlen kernels), where this torch has it.
Each variant's output is compared with eager_dense on the real tokens
("agrees"); one that cannot run says why ("skipped"). The line adds
"variants" and the fastest agreeing fused one: "best", "best_fwd_bwd_ms",
"best_fwd_ms" (fwd_bwd_ms / fwd_ms stay eager_dense's).

Run: /usr/bin/python3 tools/bench_torch_attention.py --lens 968:50,968:50 --heads 8 --kv_heads 1 --head_dim 256 --threads 2
"""
import argparse
import json
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lens", required=True, help="prefix:suffix per sample, comma-separated")
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--kv_heads", type=int, required=True)
    ap.add_argument("--head_dim", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--device", default="cpu", help="cpu (the dense-mask peer) or cuda (every PyTorch way)")
    ap.add_argument("--dtype", default=None, help="float32 or bfloat16 (default: float32 on cpu, bfloat16 on cuda)")
    a = ap.parse_args()
    if a.device != "cpu":
        return gpu_main(a)
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    lens = [tuple(int(x) for x in s.split(":")) for s in a.lens.split(",")]
    B, L = len(lens), max(p + s for p, s in lens)
    H, Hk, d = a.heads, a.kv_heads, a.head_dim
    _, _, mask = layout(lens)
    q = (torch.randn(B, H, L, d) * 0.5).requires_grad_()
    k = (torch.randn(B, Hk, L, d) * 0.5).requires_grad_()
    v = torch.randn(B, Hk, L, d).requires_grad_()
    dout = torch.randn(B, H, L, d)
    scale = d ** -0.5

    def forward():
        kk = k.repeat_interleave(H // Hk, dim=1)
        vv = v.repeat_interleave(H // Hk, dim=1)
        s = torch.matmul(q, kk.transpose(-1, -2)) * scale
        s = s.masked_fill(~mask, -2.3819763e38)
        p = torch.softmax(s.float(), dim=-1)
        return torch.matmul(p, vv)

    best_fb = best_f = 1e30
    for r in range(a.reps + 1):  # the first is a warm-up
        t0 = time.perf_counter()
        with torch.no_grad():
            forward()
        t1 = time.perf_counter()
        o = forward()
        (o * dout).sum().backward()
        t2 = time.perf_counter()
        q.grad = k.grad = v.grad = None
        if r:
            best_f, best_fb = min(best_f, t1 - t0), min(best_fb, t2 - t1)
    print(json.dumps(dict(bench="attention_peer", fwd_bwd_ms=round(best_fb * 1e3, 3), fwd_ms=round(best_f * 1e3, 3),
                          tokens=sum(p + s for p, s in lens), padded_tokens=B * L, threads=a.threads,
                          torch=torch.__version__)), flush=True)


def layout(lens):
    """the padded batch of (prefix, suffix) lengths: groups [B, L] (2 on padding), the real tokens [B, L] and
    the boolean mask [B, 1, L, L] — query i sees key j when both are real tokens of the sample and
    group_k <= group_q; padded queries see themselves (no all-masked rows)"""
    B, L = len(lens), max(p + s for p, s in lens)
    group = torch.full((B, L), 2, dtype=torch.int64)
    valid = torch.zeros((B, L), dtype=torch.bool)
    for b, (p, s) in enumerate(lens):
        group[b, :p] = 0
        group[b, p:p + s] = 1
        valid[b, :p + s] = True
    mask = (group[:, None, :] <= group[:, :, None]) & valid[:, None, :] & valid[:, :, None]
    mask |= torch.eye(L, dtype=torch.bool)[None]
    return group, valid, mask[:, None]


def gpu_main(a):
    import torch.nn.functional as F
    dev = torch.device(a.device)
    dtype = getattr(torch, a.dtype or "bfloat16")
    torch.manual_seed(0)
    lens = [tuple(int(x) for x in s.split(":")) for s in a.lens.split(",")]
    B, L = len(lens), max(p + s for p, s in lens)
    H, Hk, d = a.heads, a.kv_heads, a.head_dim
    _, valid, mask = layout(lens)
    mask, valid = mask.to(dev), valid.to(dev)
    scale = d ** -0.5
    mk = lambda *shape, s=1.0: (torch.randn(*shape, device=dev) * s).to(dtype)
    q0, k0, v0, dout = mk(B, H, L, d, s=0.5), mk(B, Hk, L, d, s=0.5), mk(B, Hk, L, d), mk(B, H, L, d)

    def leaf(t):
        return t.detach().clone().requires_grad_()

    def eager(q, k, v):
        kk, vv = k.repeat_interleave(H // Hk, dim=1), v.repeat_interleave(H // Hk, dim=1)
        s = torch.matmul(q, kk.transpose(-1, -2)).float() * scale
        s = s.masked_fill(~mask, -2.3819763e38)
        return torch.matmul(torch.softmax(s, dim=-1).to(dtype), vv)

    def sdpa(backend):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        be = getattr(SDPBackend, backend)

        def run(q, k, v):
            with sdpa_kernel(be):
                try:
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale, enable_gqa=True)
                except (RuntimeError, TypeError):  # a backend without GQA: K/V expanded, as the ports do
                    kk, vv = k.repeat_interleave(H // Hk, dim=1), v.repeat_interleave(H // Hk, dim=1)
                    return F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask, scale=scale)
        return run

    # packed order of the real tokens, and the two ragged calls' index lists
    rows = [(b, i) for b, (p, s) in enumerate(lens) for i in range(p + s)]
    pb = torch.tensor([b for b, _ in rows], device=dev)
    pi = torch.tensor([i for _, i in rows], device=dev)

    def flash_varlen():
        from torch.nn.attention.varlen import varlen_attn
        pre_rows, suf_rows, all_rows = [], [], []
        cu_p, cu_s, cu_a = [0], [0], [0]
        for b, (p, s) in enumerate(lens):
            base = sum(pp + ss for pp, ss in lens[:b])
            pre_rows += range(base, base + p)
            suf_rows += range(base + p, base + p + s)
            all_rows += range(base, base + p + s)
            cu_p.append(cu_p[-1] + p), cu_s.append(cu_s[-1] + s), cu_a.append(cu_a[-1] + p + s)
        t = lambda x: torch.tensor(x, device=dev, dtype=torch.int32)
        pre, suf, cp, cs, ca = t(pre_rows).long(), t(suf_rows).long(), t(cu_p), t(cu_s), t(cu_a)
        mp, ms, ma = max(p for p, _ in lens), max(s for _, s in lens), max(p + s for p, s in lens)

        def run(q, k, v):  # packed [T, heads, d]
            qp, kp, vp = (x[pb, :, pi] for x in (q, k, v))
            o = torch.empty_like(qp)
            o_pre = varlen_attn(qp[pre], kp[pre], vp[pre], cp, cp, mp, mp, is_causal=False)
            o_suf = varlen_attn(qp[suf], kp, vp, cs, ca, ms, ma, is_causal=False)
            o = o.index_copy(0, pre, o_pre).index_copy(0, suf, o_suf)
            out = torch.zeros(B, L, H, d, device=dev, dtype=o.dtype)
            out[pb, pi] = o
            return out.transpose(1, 2)
        return run

    def timed(fn):
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        best_f = best_fb = float("inf")
        out = None
        for r in range(a.reps + 1):
            q, k, v = leaf(q0), leaf(k0), leaf(v0)
            ev[0].record()
            with torch.no_grad():
                fn(q, k, v)
            ev[1].record()
            out = fn(q, k, v)
            out.backward(dout)
            ev[2].record()
            torch.cuda.synchronize()
            if r:
                best_f, best_fb = min(best_f, ev[0].elapsed_time(ev[1])), min(best_fb, ev[1].elapsed_time(ev[2]))
        return best_f, best_fb, out.detach()

    variants, ref = {}, None
    todo = [("eager_dense", lambda: eager)] + [("sdpa_" + b.split("_")[0].lower(), (lambda b=b: sdpa(b)))
                                               for b in ("EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")]
    todo.append(("flash_varlen", flash_varlen))
    for name, make in todo:
        try:
            f, fb, out = timed(make())
        except Exception as e:  # a backend this torch or GPU does not run: said, not fatal
            variants[name] = dict(skipped=f"{type(e).__name__}: {e}"[:300])
            continue
        got = out.transpose(1, 2)[pb, pi].float()  # the real tokens, [T, H, d]
        if ref is None:
            ref = got
        err = ((got - ref).norm() / ref.norm().clamp_min(1e-30)).item()
        variants[name] = dict(fwd_ms=round(f, 4), fwd_bwd_ms=round(fb, 4), rel_err=round(err, 5), agrees=err < 3e-2)
    fused = {n: v for n, v in variants.items() if n != "eager_dense" and v.get("agrees")}
    best = min(fused, key=lambda n: fused[n]["fwd_bwd_ms"]) if fused else None
    dense = variants.get("eager_dense", {})
    line = dict(bench="attention_peer", device=a.device, dtype=str(dtype).replace("torch.", ""),
                fwd_bwd_ms=dense.get("fwd_bwd_ms"), fwd_ms=dense.get("fwd_ms"), tokens=len(rows), padded_tokens=B * L,
                variants=variants, torch=torch.__version__, gpu=torch.cuda.get_device_name())
    if best:
        line.update(best=best, best_fwd_bwd_ms=fused[best]["fwd_bwd_ms"], best_fwd_ms=fused[best]["fwd_ms"])
    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
