"""Poisson-subsampled Gaussian: jaxdp vs dp_accounting (PLD and RDP) and prv_accountant, side by side.

Run:  python benchmarks/bench_poisson.py [--quick]  (writes benchmarks/results/poisson_speed.md)

(a) one eps(delta) after compilation (q = 0.01, sigma = 1, T = 1000, delta = 1e-5), both
    directions, vs dp_accounting's PLD accountant (default interval 1e-4, both directions);
(b) a 256-value sigma sweep: one vmapped jaxdp call vs a Python loop of dp_accounting calls
    (dp_accounting timed on a subset and scaled, stated in the output);
accuracy: every value is compared with a reference at a 4x finer jaxdp grid (2^20 cells), and
jaxdp's grid for each row is the smallest whose error is <= dp_accounting's ("equal or better
accuracy").  Also: RDP accountant and prv_accountant for the same point, and scaling tables in T
and in grid size with peak RSS.
"""

import resource
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import jaxdp  # noqa: E402
from jaxdp.core.pld import Grid  # noqa: E402
from _dpa import dpa_epsilon, dpa_rdp_epsilon  # noqa: E402

Q, SIG, T, DELTA = 0.01, 1.0, 1000, 1e-5
SIZES = (2**14, 2**15, 3 * 2**14, 2**16, 5 * 2**14, 3 * 2**15, 7 * 2**14, 2**17, 2**18)


def label(n):
    k = (n & -n).bit_length() - 1
    return f"2^{k}" if n == 2**k else f"{n >> k}*2^{k}"


def jfun(grid):
    return jax.jit(lambda s, q, t, d: jaxdp.poisson.epsilon_for_delta_bracket(d, noise_multiplier=s, sampling_probability=q, num_steps=t, grid=grid).upper)


def timeit(f, *a, reps=3):
    jax.block_until_ready(f(*a))
    t = time.perf_counter()
    for _ in range(reps):
        r = f(*a)
        jax.block_until_ready(r)
    return (time.perf_counter() - t) / reps, r


def main(quick=False):
    out = ["# Poisson accountant speed (2-core CPU)", "", "Command: `python benchmarks/bench_poisson.py`", ""]
    ref = float(jfun(Grid(size=2**20))(SIG, Q, T, DELTA))
    t0 = time.perf_counter()
    e_dpa = dpa_epsilon(SIG, Q, T, DELTA)
    t_dpa = time.perf_counter() - t0
    err_dpa = abs(e_dpa - ref) / ref
    out += [f"Reference eps (jaxdp upper at 2^20 cells): {ref:.7f}; dp_accounting PLD: {e_dpa:.7f} (rel. error {err_dpa:.1e}), {t_dpa:.3f} s.", ""]
    out += ["## (a) one eps(delta) after compilation", "", "| jaxdp grid | eps (upper) | rel. error vs ref | time (s) | dp_accounting time / jaxdp time |", "|---|---|---|---|---|"]
    chosen = None
    # FFT lengths 2^a 3^b 5^c 7^d are all fast, so the grid need not be a power of 2
    for n in SIZES:
        f = jfun(Grid(size=n))
        t, v = timeit(f, SIG, Q, T, DELTA)
        err = abs(float(v) - ref) / ref
        out.append(f"| {label(n)} | {float(v):.7f} | {err:.1e} | {t:.4f} | {t_dpa / t:.1f}x |")
        if chosen is None and err <= err_dpa:
            chosen = n
    chosen = chosen or 2**18
    out += ["", f"Smallest grid at equal or better accuracy than dp_accounting: {label(chosen)} cells.", ""]
    # (b) 256 sigma sweep
    sig = jnp.linspace(0.8, 3.0, 256)
    f = jfun(Grid(size=chosen))
    t_sweep, v = timeit(f, sig, Q, T, DELTA, reps=1)
    sub = np.asarray(sig)[:: (64 if quick else 16)]
    t1 = time.perf_counter()
    dv = [dpa_epsilon(float(s), Q, T, DELTA) for s in sub]
    t_loop = (time.perf_counter() - t1) / len(sub) * 256
    rel = np.max(np.abs(np.asarray(v)[:: (64 if quick else 16)] / np.array(dv) - 1))
    out += ["## (b) 256-value sigma sweep", "",
            f"jaxdp (one batched call, grid {label(chosen)}): {t_sweep:.2f} s; dp_accounting loop: {t_loop:.1f} s "
            f"(timed on {len(sub)} of the 256 values, scaled); ratio {t_loop / t_sweep:.1f}x; max |jaxdp/dpa - 1| = {rel:.1e}.", ""]
    # other accountants, one point
    t1 = time.perf_counter()
    e_rdp = dpa_rdp_epsilon(SIG, Q, T, DELTA)
    t_rdp = time.perf_counter() - t1
    rows = [("dp_accounting RDP (an upper bound, looser)", e_rdp, t_rdp)]
    try:
        from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant

        t1 = time.perf_counter()
        acc = PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=SIG, sampling_probability=Q)],
                            max_self_compositions=[T], eps_error=0.01, delta_error=1e-9)
        lo, est, up = acc.compute_epsilon(delta=DELTA, num_self_compositions=[T])
        rows.append((f"prv_accountant (remove direction; bracket [{lo:.4f}, {up:.4f}])", up, time.perf_counter() - t1))
    except Exception as e:  # noqa: BLE001
        rows.append((f"prv_accountant unavailable: {type(e).__name__}: {e}", float("nan"), float("nan")))
    out += ["## Other accountants at the same point", "", "| accountant | eps | time (s) |", "|---|---|---|"]
    out += [f"| {n} | {e:.5f} | {t:.3f} |" for n, e, t in rows]
    # scaling in T and grid
    out += ["", "## Scaling in T (grid 2^18): cost independent of T", "", "| T | time (s) | eps |", "|---|---|---|"]
    f = jfun(Grid(size=2**18))
    for t_ in (1, 100, 10000, 100000):
        tt, v = timeit(f, SIG, Q, t_, DELTA)
        out.append(f"| {t_} | {tt:.4f} | {float(v):.5f} |")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out += ["", f"Peak RSS of the benchmark process: {rss:.0f} MiB."]
    text = "\n".join(out) + "\n"
    with open("benchmarks/results/poisson_speed.md", "w") as fh:
        fh.write(text)
    print(text)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
