"""Errors of the exact single-epoch shuffled law against its independent references, for
docs/shuffle_exact.md ("Error analysis and measured errors"), which quotes this script's output.

    python benchmarks/shuffle_errors.py > benchmarks/results/shuffle_errors.md

References: the mpmath / scipy values stored in tests/shuffle/test_exact_law.py (REF: Gil-Pelaez
inversion with Gauss-Legendre panels, tests/shuffle/reference_law.py) and, for the gap, the
damped-FFT table read at L = 1 (``tv_gap(method="table")``) on a 40 x 60 log-spaced grid.  The
tests assert tolerances (1e-10 on survival functions, 1e-8 on curves and gaps, 2e-8 between the two
gap methods); the figures here are what this machine measures, down to float round-off, so their
last digits may differ on another CPU or JAX version.
"""

from __future__ import annotations

import math
import os
import platform
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "shuffle"))
import jaxdp  # noqa: E402,F401  (float64)
from jaxdp.mechanisms.shuffled import ShuffledGaussian, tradeoff_ends, tv_gap  # noqa: E402
from test_exact_law import REF  # noqa: E402


def _g(x):
    return f"{x:.1e}"


def reference_errors():
    """Max abs error over each REF point's thresholds: Q-sf, P-sf (mechanism defaults), curve f(a)
    (the computed value, i.e. the midpoint of ``tradeoff_ends``; both directions, the larger; each
    reference must lie between the ends) and the gap (direct-function defaults)."""
    rows = []
    for (sigma, m), ref in REF.items():
        x, p_sf, q_cdf, q_sf = np.array(ref).T
        mech = ShuffledGaussian(noise_multiplier=sigma, num_rounds=m)
        a, b = (np.asarray(v) for v in mech.privacy_loss_sf(jnp.log1p(x / math.sqrt(m)), "remove"))
        f, fr = 0.0, 0.0
        for rev, at, want in ((False, p_sf, q_cdf), (True, q_cdf, p_sf)):
            lo, up = (np.asarray(v) for v in tradeoff_ends(jnp.asarray(at), sigma, m, reverse=rev))
            assert np.all(lo <= want + 1e-12) and np.all(up >= want - 1e-12), (sigma, m, rev)
            if rev:
                fr = 0.5 * (lo + up)
            else:
                f = 0.5 * (lo + up)
        gap = float(tv_gap(sigma, m))
        gap_ref = q_sf[x == 0.0][0] - p_sf[x == 0.0][0]
        rows.append((sigma, m, np.max(np.abs(a - q_sf)), np.max(np.abs(b - p_sf)),
                     max(np.max(np.abs(f - q_cdf)), np.max(np.abs(fr - p_sf))), abs(gap - gap_ref)))
    return rows


def gap_methods():
    """The contour gap against the tabulated law's gap on 40 sigma in [0.3, 50] x 60 M in [2, 1e10]."""
    s, m = (a.ravel() for a in np.meshgrid(np.geomspace(0.3, 50, 40), np.geomspace(2, 1e10, 60), indexing="ij"))
    fast = np.asarray(tv_gap(s, m))
    table = np.asarray(tv_gap(s, m, method="table"))
    d = np.abs(fast - table)
    k = int(np.nanargmax(d))
    return len(s), int(np.sum(~np.isfinite(fast)) + np.sum(~np.isfinite(table))), d[k], s[k], m[k]


def main():
    print("# Exact shuffled law: measured errors (benchmarks/shuffle_errors.py)")
    print()
    print(f"jax {jax.__version__}, numpy {np.__version__}, {platform.machine()}, backend {jax.default_backend()}.")
    print()
    print("Max abs error over the thresholds of each reference point (mechanism defaults for the survival")
    print("functions, direct-function defaults for the curve and the gap; the curve is the worse direction):")
    print()
    print("| sigma | M | Q-sf | P-sf | curve f(a) | gap |")
    print("|---|---|---|---|---|---|")
    for sigma, m, *errs in reference_errors():
        print(f"| {sigma:g} | {m:g} | " + " | ".join(_g(e) for e in errs) + " |")
    n, nan, worst, s, m = gap_methods()
    print()
    print(f"Contour gap vs the tabulated law's gap, {n:,} (sigma, M) points: max |difference| {_g(worst)} "
          f"(sigma = {s:.2g}, M = {m:.3g}), {nan} NaN.")


if __name__ == "__main__":
    main()
