#!/usr/bin/env python3
"""Reference values for cugym's Adam (tests/nn/test_adam.cpp), computed independently in float64
with NumPy: torch.optim.Adam's update (bias correction, eps outside the square root, no weight
decay) after torch.nn.utils.clip_grad_norm_ (scale by max_norm / (norm + 1e-6) when that is < 1).

    python3 scripts/nn_reference.py            # writes tests/fixtures/nn/adam_reference.csv
    python3 scripts/nn_reference.py --check    # also compares with PyTorch when it is installed

Inputs (initial parameters, gradients) are float32 values, written exactly; outputs are float64.
"""

import argparse
import os
import sys

import numpy as np

CASES = [
    # name, lr, beta1, beta2, eps, max_grad_norm (0 = no clipping), grad scale per step
    ("default", 1e-3, 0.9, 0.999, 1e-8, 0.0, [1, 1, 1, 1, 1]),
    ("betas_eps", 1e-2, 0.8, 0.99, 1e-6, 0.0, [1, 0.5, 2, 1, 0.1]),
    ("clip", 5e-2, 0.9, 0.999, 1e-8, 0.5, [1, 3, 0.05, 1, 2]),
    ("clip_large_eps", 1e-1, 0.9, 0.999, 1e-1, 1.0, [2, 0.2, 4, 1, 0.5]),
]
N = 6


def adam_reference(p0, grads, lr, beta1, beta2, eps, max_norm):
    """Yields (grad_norm, p, m, v) after each step, all float64."""
    p = p0.astype(np.float64)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        g = g.astype(np.float64)
        norm = float(np.sqrt(np.sum(g * g)))
        if max_norm > 0:
            coef = max_norm / (norm + 1e-6)
            if coef < 1:
                g = g * coef
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        bc1 = 1 - beta1**t
        bc2 = 1 - beta2**t
        p = p - (lr / bc1) * m / (np.sqrt(v) / np.sqrt(bc2) + eps)
        yield norm, p.copy(), m.copy(), v.copy()


def torch_check(p0, grads, lr, beta1, beta2, eps, max_norm, expected):
    import torch  # optional

    param = torch.nn.Parameter(torch.tensor(p0, dtype=torch.float64))
    opt = torch.optim.Adam([param], lr=lr, betas=(beta1, beta2), eps=eps)
    for g, (_, p_ref, _, _) in zip(grads, expected):
        param.grad = torch.tensor(g, dtype=torch.float64)
        if max_norm > 0:
            torch.nn.utils.clip_grad_norm_([param], max_norm)
        opt.step()
        err = float(np.max(np.abs(param.detach().numpy() - p_ref)))
        if err > 1e-12:
            return err
    return 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--out", default=os.path.join(root, "tests", "fixtures", "nn", "adam_reference.csv"))
    parser.add_argument("--check", action="store_true", help="compare with PyTorch (float64) when installed")
    args = parser.parse_args()

    rng = np.random.default_rng(20260101)
    rows = ["case,lr,beta1,beta2,eps,max_grad_norm,step,index,grad,param,exp_avg,exp_avg_sq,grad_norm"]
    for case_id, (name, lr, beta1, beta2, eps, max_norm, scales) in enumerate(CASES):
        p0 = rng.uniform(-1, 1, N).astype(np.float32)
        grads = [(rng.normal(0, 1, N) * s).astype(np.float32) for s in scales]
        head = f"{case_id},{lr!r},{beta1!r},{beta2!r},{eps!r},{max_norm!r}"
        for i in range(N):
            rows.append(f"{head},0,{i},0,{float(p0[i])!r},0,0,0")
        expected = list(adam_reference(p0, grads, lr, beta1, beta2, eps, max_norm))
        for t, (g, (norm, p, m, v)) in enumerate(zip(grads, expected), start=1):
            for i in range(N):
                rows.append(
                    f"{head},{t},{i},{float(g[i])!r},{float(p[i])!r},{float(m[i])!r},{float(v[i])!r},{float(norm)!r}"
                )
        if args.check:
            try:
                err = torch_check(p0, grads, lr, beta1, beta2, eps, max_norm, expected)
                print(f"{name}: max |numpy - torch| = {err:.3g}")
                if err > 1e-12:
                    sys.exit(f"{name}: NumPy reference and PyTorch disagree")
            except ImportError:
                print("PyTorch not installed: skipping the cross-check")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"wrote {args.out} ({len(rows) - 1} rows, {len(CASES)} cases)")


if __name__ == "__main__":
    main()
