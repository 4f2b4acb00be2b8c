#!/usr/bin/python3
"""bench_torch_attention.py — the PyTorch eager peer of `vla bench attention`.

The dense-mask attention a PyTorch π0.5 port runs on a CPU (openpi's
PI0Pytorch and LeRobot's pi05 build a 4-D boolean mask with
make_att_2d_masks and call eager attention): samples padded to the longest,
K/V repeated to every query head (HF repeat_kv), scores = Q·Kᵀ·scale with
the mask applied (openpi fills with -2.3819763e38), softmax in float32, P·V;
then backward from a fixed random dO. Prefix tokens (group 0) see the prefix,
suffix tokens (group 1) see everything of their sample; no token sees
another sample or padding. Debian's torch 1.13 has no fused attention on CPU.

Prints one JSON line:
  {"bench":"attention_peer","fwd_bwd_ms":…,"fwd_ms":…,"tokens":…,"padded_tokens":…,"torch":…}

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
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    lens = [tuple(int(x) for x in s.split(":")) for s in a.lens.split(",")]
    B, L = len(lens), max(p + s for p, s in lens)
    H, Hk, d = a.heads, a.kv_heads, a.head_dim
    group = torch.full((B, L), 2, dtype=torch.int64)  # padding: group 2, and invalid below
    valid = torch.zeros((B, L), dtype=torch.bool)
    for b, (p, s) in enumerate(lens):
        group[b, :p] = 0
        group[b, p:p + s] = 1
        valid[b, :p + s] = True
    # query i sees key j: both real tokens of the sample and group_k <= group_q
    mask = (group[:, None, :] <= group[:, :, None]) & valid[:, None, :] & valid[:, :, None]
    mask |= torch.eye(L, dtype=torch.bool)[None]  # padded queries see themselves (no all-masked rows)
    mask = mask[:, None]  # [B, 1, L, L]
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


if __name__ == "__main__":
    main()
