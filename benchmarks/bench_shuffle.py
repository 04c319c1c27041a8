"""Shuffled DP-SGD: jaxdp exact accounting vs the random-allocation peer and a numpy Monte Carlo.

Run:  python benchmarks/bench_shuffle.py  (writes benchmarks/results/shuffle.md)

1. eps(delta = 1e-5) at sigma = 1, M = t = 100, E in {1, 10}: jaxdp certified bracket vs
   PLD_accounting (Feldman & Shenfeld's `pld-accounting` 2.0, GEOM method, loss discretisation
   1e-2: DOMINATES = upper bound, IS_DOMINATED = lower bound), side by side, with times.
2. Exact single-epoch curve (8 values of a) + gap for a batch of 1024 (sigma, M) pairs (the public
   batch call, pairs grouped by method, each group vmapped), after compilation, vs a numpy Monte Carlo of the gap reaching the same accuracy (extrapolated
   from its measured cost per sample: standard error 1e-6 needs ~v / (4 M 1e-12) samples).
3. Cost of E-epoch accounting for E in {10, 100, 1e3, 1e4} (independent of E) and of the
   single-epoch law for M in {1e2, ..., 1e10} (independent of M).
"""

import os
import sys
import time
import tracemalloc

import jax
import jax.numpy as jnp
import numpy as np

import jaxdp
import jaxdp.shuffle as sh
from jaxdp.mechanisms import shuffled as ex


def timed(f, *a, reps=3):
    r = f(*a)
    jax.block_until_ready(r)
    t = time.perf_counter()
    for _ in range(reps):
        r = f(*a)
        jax.block_until_ready(r)
    return (time.perf_counter() - t) / reps, r


def peer():
    from PLD_accounting import AllocationSchemeConfig, BoundType, ConvolutionMethod, PrivacyParams
    from PLD_accounting import gaussian_allocation_epsilon_configurable as eps_conf

    rows = []
    for E in (1, 10):
        cfg = AllocationSchemeConfig(loss_discretization=1e-2, convolution_method=ConvolutionMethod.GEOM)
        p = PrivacyParams(sigma=1.0, num_steps=100, num_epochs=E, delta=1e-5)
        t = time.perf_counter()
        up = eps_conf(params=p, config=cfg, bound_type=BoundType.DOMINATES)
        t_up = time.perf_counter() - t
        t = time.perf_counter()
        lo = eps_conf(params=p, config=cfg, bound_type=BoundType.IS_DOMINATED)
        t_lo = time.perf_counter() - t
        f = jax.jit(lambda: sh.epsilon_for_delta_bracket(1e-5, noise_multiplier=1.0, num_rounds=100.0, num_epochs=E))
        t0 = time.perf_counter()
        b = f()
        jax.block_until_ready(b.upper)
        t_first = time.perf_counter() - t0
        t_j, b = timed(f)
        rows.append((E, float(b.lower), float(b.upper), t_j, t_first, lo, up, t_up + t_lo))
    return rows


def batch_1024():
    """Curve (8 points) + gap for 1024 pairs drawn log-uniformly over the whole documented domain."""
    sig, M = (jnp.asarray(x) for x in _pairs_1024())
    a = jnp.linspace(0.01, 0.9, 8)

    # the public batch call: concrete inputs, so the pairs are grouped by method (one Fourier line
    # per pair; the tabulated law only where the line's checks fail)
    def curve_f(s, m):
        return sh.tradeoff(a, noise_multiplier=s, num_rounds=m)

    gap_f = jax.jit(lambda s, m: ex.tv_gap(s, m))
    t_first = time.perf_counter()
    jax.block_until_ready((curve_f(sig, M), gap_f(sig, M)))
    t_first = time.perf_counter() - t_first
    t_curve, curve = timed(curve_f, sig, M, reps=1)
    t_gap, gap = timed(gap_f, sig, M, reps=1)
    # curve and gap in one call: the gap from the same line nodes (the contour gap where the line fails)
    t_both, (curve2, gap2) = timed(lambda s, m: ex.tradeoff_curves(a, s, m, return_gap=True), sig, M, reps=3)
    gap_diff = float(jnp.max(jnp.abs(gap2 - gap)))
    nan = int(jnp.sum(~jnp.isfinite(gap))) + int(jnp.sum(~jnp.isfinite(curve)))
    nan += int(jnp.sum(~jnp.isfinite(gap2))) + int(jnp.sum(~jnp.isfinite(curve2)))
    from jaxdp.mechanisms._shuffled_gap import line_curve

    ok = jax.jit(jax.vmap(lambda s1, m1: line_curve(a, s1, m1)[1]))(sig, M)
    n_table = int(jnp.sum(~ok | (M == 1.0)))
    # the same curves, every pair from the tabulated law (the traced path, e.g. under jit)
    table_f = jax.jit(lambda s, m: jax.vmap(lambda s1, m1: ex.tradeoff(a, s1, m1))(s, m))
    t_table, table = timed(table_f, sig, M, reps=1)
    diff = float(jnp.nanmax(jnp.abs(table - curve)))
    # numpy Monte Carlo of the gap at one (sigma, M): TV = E_P|L-1|/2; cost per sample measured
    s0, m0 = 1.0, 1000
    n = 2000
    t0 = time.perf_counter()
    x = np.random.default_rng(1).standard_normal((n, m0))
    L = np.mean(np.exp(x / s0 - 0.5 / s0**2), axis=1)
    _ = 0.5 * np.mean(np.abs(L - 1))
    per_sample = (time.perf_counter() - t0) / n
    var = np.var(0.5 * np.abs(L - 1))
    need = var / (1e-6) ** 2  # samples for standard error 1e-6
    # cost of one sample is ~M normal draws: scale by the batch's mean M (capped at 1e6 draws/sample)
    mean_m = float(np.mean(np.minimum(np.asarray(M), 1e6)))
    mc_time_1024 = need * per_sample * 1024 * (mean_m / m0)
    return t_curve, t_gap, t_first, nan, per_sample, need, mc_time_1024, n_table, t_table, diff, t_both, gap_diff


def _pairs_1024():
    rng = np.random.default_rng(0)
    sig = 10 ** rng.uniform(np.log10(0.3), np.log10(50.0), 1024)
    M = 10 ** rng.uniform(0.0, 10.0, 1024)
    return sig, M


def batch_1024_sharded_child():
    """Same 1024 pairs through jaxdp.sweep over every local device (run with 2 host devices)."""
    from jaxdp.sweep import sweep

    sig, M = _pairs_1024()
    a = jnp.linspace(0.01, 0.9, 8)

    def fn(noise_multiplier, num_rounds):
        return ex.tradeoff(a, noise_multiplier, num_rounds), ex.tv_gap(noise_multiplier, num_rounds)

    pts = dict(noise_multiplier=sig, num_rounds=M)
    t0 = time.perf_counter()
    sweep(fn, pts, chunk_size=1024, progress=False)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = sweep(fn, pts, chunk_size=1024, progress=False)
    t = time.perf_counter() - t0
    curve, gap = res["value"]
    nan = int(np.sum(~np.isfinite(curve))) + int(np.sum(~np.isfinite(gap)))
    print(f"RESULT {jax.device_count()} {t} {t_first} {nan}")


def batch_1024_sharded():
    import subprocess

    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    p = subprocess.run([sys.executable, __file__, "sharded-child"], env=env, capture_output=True, text=True)
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT")]
    if not line:
        raise RuntimeError(p.stderr[-3000:])
    _, ndev, t, tf, nan = line[-1].split()
    return int(ndev), float(t), float(tf), int(nan)


def batch_scaling():
    """Gap: time per point vs batch size (one compilation per size)."""
    rows = []
    rng = np.random.default_rng(2)
    for n in (64, 256, 1024, 4096):
        sig = jnp.asarray(10 ** rng.uniform(np.log10(0.3), np.log10(50.0), n))
        M = jnp.asarray(10 ** rng.uniform(0.0, 10.0, n))
        t, _ = timed(jax.jit(lambda s, m: ex.tv_gap(s, m)), sig, M, reps=1)
        rows.append((n, t))
    grid_rows = []
    for gs in (2**10, 2**11, 2**12):
        f = jax.jit(lambda s, m, gs=gs: jax.vmap(lambda s1, m1: ex.tradeoff(jnp.linspace(0.01, 0.9, 8), s1, m1, grid_size=gs))(s, m))
        sig = jnp.asarray(10 ** rng.uniform(np.log10(0.5), np.log10(5.0), 64))
        M = jnp.asarray(10 ** rng.uniform(2.0, 10.0, 64))
        t, c = timed(f, sig, M, reps=1)
        grid_rows.append((gs, t / 64, int(jnp.sum(~jnp.isfinite(c)))))
    return rows, grid_rows


def scaling():
    rows_E = []
    # one compilation for every E (a traced integer): the cost is the same program for each E
    f = jax.jit(lambda e: sh.epsilon_for_delta_bracket(1e-5, noise_multiplier=1.0, num_rounds=1000.0, num_epochs=e).upper)
    for E in (10, 100, 1000, 10000):
        t, v = timed(f, jnp.asarray(E))
        rows_E.append((E, t, float(v)))
    rows_M = []
    g = jax.jit(lambda m: ex.tv_gap(1.0, m))
    for M in (1e2, 1e4, 1e6, 1e8, 1e10):
        t, v = timed(g, M)
        rows_M.append((M, t, float(v)))
    return rows_E, rows_M


def _flush(out, lines):
    """Write what is measured so far (a long run that is stopped still leaves its sections)."""
    with open(out, "w") as f:
        f.write("\n".join(lines + ["", "(partial: the run had not finished)"]) + "\n")
    print("\n".join(lines), flush=True)


def main(out="benchmarks/results/shuffle.md"):
    tracemalloc.start()
    lines = ["# Shuffled DP-SGD benchmarks", "", "Command: `python benchmarks/bench_shuffle.py` (2-core CPU).", ""]
    try:
        if os.environ.get("JAXDP_BENCH_NO_PEER"):
            raise ImportError("skipped (JAXDP_BENCH_NO_PEER set)")
        rows = peer()
        lines += ["## vs random-allocation peer (`pld-accounting` 2.0, GEOM, discretisation 1e-2), sigma = 1, M = 100, delta = 1e-5", "",
                  "| E | jaxdp lower | jaxdp upper | jaxdp time (s, compiled) | jaxdp first call (s) | peer lower | peer upper | peer time (s) | time ratio peer/jaxdp |", "|---|---|---|---|---|---|---|---|---|"]
        for E, lo, up, tj, tf, plo, pup, tp in rows:
            lines.append(f"| {E} | {lo:.5f} | {up:.5f} | {tj:.3f} | {tf:.1f} | {plo:.5f} | {pup:.5f} | {tp:.2f} | {tp / tj:.1f}x |")
    except ImportError as e:  # pragma: no cover
        lines.append(f"peer not installed: {e}")
    _flush(out, lines)
    tc, tg, tf, nan, per, need, mc, n_table, t_table, diff, t_both, gap_diff = batch_1024()
    lines += ["", "## Exact single-epoch curve (8 points) + gap for 1024 (sigma, M) pairs", "",
              "Pairs log-uniform over the documented domain, sigma in [0.3, 50], M in [1, 1e10]; a = linspace(0.01, 0.9, 8).", "",
              f"jaxdp (`jaxdp.shuffle.tradeoff(a, noise_multiplier=sig, num_rounds=M)`, pairs grouped by method: "
              f"{1024 - n_table} curves from one Fourier line, {n_table} from the tabulated law): curve {tc:.2f} s + gap {tg:.2f} s = "
              f"{tc + tg:.2f} s after compilation ({tf:.1f} s first call); {nan} NaN values.",
              f"**Curve and gap in one call** (`jaxdp.mechanisms.shuffled.tradeoff_curves(a, sig, M, return_gap=True)`: the gap "
              f"from the same line nodes, the contour gap where the line fails): **{t_both:.2f} s** (mean of 3, after compilation); "
              f"max |gap - contour gap| {gap_diff:.1e}.",
              f"Every curve from the tabulated law instead (the traced path, under jit): {t_table:.2f} s; max |difference| "
              f"between the two routes: {diff:.1e}.",
              f"numpy Monte Carlo of the gap: {per * 1e6:.1f} us/sample at M = 1000; standard error 1e-6 needs {need:.2e} samples per point;",
              f"for the same 1024 points (scaled by mean M, capped at 1e6) that is about {mc:.2e} s: ratio {mc / (tc + tg):.1e}x.", ""]
    _flush(out, lines)
    ndev, ts, tfs, nans = batch_1024_sharded()
    lines += [f"The same 1024 pairs through `jaxdp.sweep` (traced, so every curve from the tabulated law) sharded over {ndev} host devices (one per core, "
              f"`XLA_FLAGS=--xla_force_host_platform_device_count=2`): curve + gap {ts:.2f} s after compilation "
              f"({tfs:.1f} s first call), {nans} NaN values.", ""]
    _flush(out, lines)
    rB, rG = batch_scaling()
    lines += ["## Batch size (exact single-epoch gap, pairs over the whole domain)", "", "| batch | time (s) | ms per point |", "|---|---|---|"]
    lines += [f"| {n} | {t:.2f} | {1e3 * t / n:.2f} |" for n, t in rB]
    lines += ["", "## Grid size of the tabulated law (curve at 8 points, 64 pairs, sigma in [0.5, 5], M in [1e2, 1e10])", "",
              "| grid_size | ms per pair | NaN |", "|---|---|---|"]
    lines += [f"| {gs} | {1e3 * t:.1f} | {nn} |" for gs, t, nn in rG]
    _flush(out, lines)
    rE, rM = scaling()
    lines += ["## Cost independent of E (exact eps, sigma = 1, M = 1000, delta = 1e-5)", "", "| E | time (s) | eps |", "|---|---|---|"]
    lines += [f"| {E} | {t:.3f} | {v:.5f} |" for E, t, v in rE]
    lines += ["", "## Cost independent of M (exact single-epoch gap, sigma = 1)", "", "| M | time (s) | gap |", "|---|---|---|"]
    lines += [f"| {M:.0e} | {t:.4f} | {v:.6g} |" for M, t, v in rM]
    _, peak = tracemalloc.get_traced_memory()
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines += ["", f"Peak RSS of the benchmark process: {rss:.0f} MiB."]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:2] == ["sharded-child"]:
        batch_1024_sharded_child()
    else:
        main(*sys.argv[1:])
    _ = os, jaxdp
