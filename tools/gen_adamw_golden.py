#!/usr/bin/python3
"""gen_adamw_golden.py — PyTorch reference for distributed/zero1.c: torch.optim.AdamW
with torch.nn.utils.clip_grad_norm_ on a small parameter vector, written to
tests/distributed/data/adamw_golden.json (params after each step).
Run with Debian's interpreter: /usr/bin/python3 tools/gen_adamw_golden.py"""
import json, math, os
import torch

torch.manual_seed(0)
n, steps = 37, 4
lr, betas, eps, wd, max_norm = 0.05, (0.9, 0.999), 1e-8, 0.1, 0.5
p0 = torch.randn(n, dtype=torch.float32)
grads = [torch.randn(n, dtype=torch.float32) * (0.2 + s) for s in range(steps)]
p = torch.nn.Parameter(p0.clone())
opt = torch.optim.AdamW([p], lr=lr, betas=betas, eps=eps, weight_decay=wd)
after, norms = [], []
for s in range(steps):
    opt.zero_grad()
    p.grad = grads[s].clone()
    norms.append(float(torch.nn.utils.clip_grad_norm_([p], max_norm)))
    opt.step()
    after.append(p.detach().tolist())
out = {"n": n, "lr": lr, "beta1": betas[0], "beta2": betas[1], "eps": eps, "weight_decay": wd,
       "max_grad_norm": max_norm, "p0": p0.tolist(), "grads": [g.tolist() for g in grads],
       "grad_norms": norms, "params_after": after}
path = os.path.join(os.path.dirname(__file__), "..", "tests", "distributed", "data", "adamw_golden.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path)
