"""Vmapped calibration grid (jaxdp.pufferfish) vs a plain numpy/scipy loop (brentq per point).

Grid: every UCI pair of ``jaxdp.pufferfish.experiments`` x alpha x eps, Laplace ``tight`` and
Gaussian ``theorem2`` (the sufficient conditions that have a scalar root per point), both computed
on the quantile coupling. The baseline loops in Python over points and calls
``scipy.optimize.brentq`` on the same condition written in numpy.

Run::

    python benchmarks/bench_pufferfish.py            # prints a table, writes benchmarks/results/pufferfish.md
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

import jax
import jax.numpy as jnp

import jaxdp  # noqa: F401
from jaxdp.pufferfish import experiments as ex
from jaxdp.pufferfish.calibration import laplace_scale, gaussian_scale, coupled_differences

ALPHAS = [a for a in ex.ALPHAS if np.isfinite(a)]


def numpy_loop(pairs, alphas, epss):
    out_b, out_s = [], []
    for x, wx, y, wy in pairs:
        d, lm, w1, w2, winf = (np.asarray(v) for v in coupled_differences(x, wx, y, wy))
        keep = np.isfinite(lm)
        d, lm = d[keep], lm[keep]
        for a in alphas:
            for e in epss:
                def lg(t):
                    return np.log(a / (2 * a - 1) * np.exp((a - 1) * t) + (a - 1) / (2 * a - 1) * np.exp(-a * t))
                ft = lambda b: logsumexp(lm + lg(d / b)) / (a - 1) - e
                out_b.append(brentq(ft, 1e-3 * winf / e, 10 * winf / e, xtol=1e-13, rtol=1e-14))
                fg = lambda s2: logsumexp(lm + a * (a - 1) * d * d / (2 * s2)) / (a - 1) - e
                out_s.append(np.sqrt(brentq(fg, 1e-3 * a * w2**2 / e, 10 * a * winf**2 / e, xtol=1e-13, rtol=1e-14)))
    return np.array(out_b), np.array(out_s)


@jax.jit
def jax_grid(x, wx, y, wy, A, E):
    def pt(x, wx, y, wy, a, e):
        return (laplace_scale(x, wx, y, wy, a, e, method="tight"), gaussian_scale(x, wx, y, wy, a, e, method="theorem2"))
    return jax.vmap(jax.vmap(pt, (None,) * 4 + (0, 0)), (0,) * 4 + (None, None))(x, wx, y, wy, A, E)


def main():
    (x, wx, y, wy), meta = ex.load_pairs()
    A, E = np.meshgrid(ALPHAS, ex.EPSILONS, indexing="ij")
    A, E = A.ravel(), E.ravel()
    t = time.perf_counter(); b, s = jax_grid(x, wx, y, wy, A, E); b.block_until_ready()
    t_compile = time.perf_counter() - t
    reps = 5
    t = time.perf_counter()
    for _ in range(reps):
        b, s = jax_grid(x, wx, y, wy, A, E); b.block_until_ready()
    t_jax = (time.perf_counter() - t) / reps
    pairs = [(np.asarray(x[p]), np.asarray(wx[p]), np.asarray(y[p]), np.asarray(wy[p])) for p in range(len(meta))]
    with np.errstate(over="ignore"):  # exp overflow at the lower bracket end is harmless (-> +inf)
        t = time.perf_counter(); nb, ns = numpy_loop(pairs, ALPHAS, ex.EPSILONS); t_np = time.perf_counter() - t
    err = max(np.max(np.abs(np.asarray(b).ravel() / nb - 1)), np.max(np.abs(np.asarray(s).ravel() / ns - 1)))
    npts = len(meta) * len(A)
    lines = [
        "# Pufferfish calibration grid: vmapped JAX vs numpy/scipy loop", "",
        f"Grid: {len(meta)} UCI pairs x {len(ALPHAS)} alphas x {len(ex.EPSILONS)} eps = {npts} points, "
        "two conditions per point (Laplace tight, Gaussian Theorem 2).", "",
        "| implementation | seconds | per point |", "|---|---|---|",
        f"| jaxdp vmapped grid (one jitted call, after compile) | {t_jax:.4f} | {t_jax / npts * 1e6:.1f} us |",
        f"| jaxdp first call (compile + run) | {t_compile:.2f} | |",
        f"| numpy + scipy.optimize.brentq loop | {t_np:.3f} | {t_np / npts * 1e6:.1f} us |", "",
        f"Speed-up (loop / vmapped, excluding compile): **{t_np / t_jax:.1f}x**; max relative difference "
        f"of the results: {err:.2e}.", "",
        f"Machine: {os.cpu_count()} CPUs (load average {os.getloadavg()[0]:.1f} at the end of the run: shared "
        f"machine, absolute times are inflated), jax {jax.__version__}, backend {jax.default_backend()}. "
        "Reproduce: `python benchmarks/bench_pufferfish.py`.",
    ]
    text = "\n".join(lines)
    print(text)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "pufferfish.md")
    if "--no-write" not in sys.argv:
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
