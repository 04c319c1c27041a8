"""Cold start, side by side: whole processes of jaxdp and dp_accounting at issue 18's settings.

Run:  python benchmarks/coldstart.py [RUNS]      (default 3 runs of each; idle machine)

Every figure is one fresh Python process timed by ``/usr/bin/time`` (wall seconds and peak RSS):

* ``cold``: jaxdp's persistent compilation cache switched off (``JAXDP_CACHE_DIR=off``), so the
  process compiles everything it runs;
* ``warm cache``: a cache directory filled by one unmeasured process first, then measured;
* dp_accounting has no compilation: its rows are whole processes of the same query.

Prints a markdown table (median and min-max over RUNS, peak RSS median) and the ratios of the
medians.  Then, in this process and at the default settings (``accuracy=1e-2``), warm (after one
unmeasured call): a 256-sigma Poisson eps sweep (sigma in [0.8, 3]) against a loop of
dp_accounting calls over the same sigmas, and one eps, each the best of RUNS; every returned value
is checked against the 2^18-cell grid's bracket (``grid=DEFAULT_GRID``, the fine reference).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
PY = sys.executable
JAXDP_BIN = os.path.join(os.path.dirname(PY), "jaxdp")

POISSON = ("import jaxdp.poisson as po; print(float(po.epsilon_for_delta(1e-5, noise_multiplier=1.0, "
           "sampling_probability=0.01, num_steps=1000)))")
SHUFFLE = ("import jaxdp.shuffle as sh; print(float(sh.epsilon_for_delta(1e-5, noise_multiplier=1.0, "
           "num_rounds=100, num_epochs=10)))")
DPA = ("import dp_accounting as dpa; from dp_accounting.pld import pld_privacy_accountant as p; "
       "a = p.PLDAccountant(); a.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, "
       "dpa.GaussianDpEvent(1.0)), 1000)); print(a.get_epsilon(1e-5))")

CASES = [
    ("poisson eps(1e-5), q 0.01, sigma 1, T 1000", [PY, "-c", POISSON], True),
    ("dp_accounting PLD, same eps", [PY, "-c", DPA], False),
    ("shuffled eps(1e-5), sigma 1, M 100, E 10", [PY, "-c", SHUFFLE], True),
    ("jaxdp poisson --sigma 1 --q 0.01 --steps 1000", [JAXDP_BIN, "poisson", "--sigma", "1", "--q", "0.01", "--steps", "1000"], True),
    ("jaxdp shuffle --sigma 1 --rounds 10000", [JAXDP_BIN, "shuffle", "--sigma", "1", "--rounds", "10000"], True),
    ("jaxdp plan", [JAXDP_BIN, "plan"], True),
]


def timed(cmd, env):
    out = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M", *cmd], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{out.stderr[-2000:]}")
    line = [x for x in out.stderr.splitlines() if x.startswith("TIME ")][-1]
    wall, rss_kb = line.split()[1:]
    return float(wall), float(rss_kb) / 1024.0


def series(cmd, env):
    runs = [timed(cmd, env) for _ in range(RUNS)]
    walls, rss = [r[0] for r in runs], [r[1] for r in runs]
    return statistics.median(walls), min(walls), max(walls), statistics.median(rss)


def main():
    base = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", ""))
    rows, med = [], {}
    for name, cmd, jax_side in CASES:
        if jax_side:
            cold = series(cmd, dict(base, JAXDP_CACHE_DIR="off"))
            d = tempfile.mkdtemp(prefix="jaxdp-coldstart-")
            try:
                env = dict(base, JAXDP_CACHE_DIR=d)
                timed(cmd, env)  # fills the cache (not measured)
                warm = series(cmd, env)
            finally:
                shutil.rmtree(d, ignore_errors=True)
        else:
            cold = warm = series(cmd, base)
        med[name] = (cold[0], warm[0])
        rows.append(f"| {name} | {cold[0]:.2f} ({cold[1]:.2f}-{cold[2]:.2f}) | {cold[3]:.0f} | "
                    f"{warm[0]:.2f} ({warm[1]:.2f}-{warm[2]:.2f}) | {warm[3]:.0f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    print(f"Whole processes, {RUNS} runs each, `/usr/bin/time` (median (min-max) wall seconds, median peak RSS MB); "
          f"{os.cpu_count()} CPUs visible.\n")
    print("| what | cold: no cache (s) | RSS (MB) | warm persistent cache (s) | RSS (MB) |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    p, d = med[CASES[0][0]], med[CASES[1][0]]
    print(f"\nRatio jaxdp / dp_accounting, Poisson eps, whole process: cold {p[0] / d[0]:.2f}x, "
          f"warm cache {p[1] / d[0]:.2f}x (issue 18 asks <= 2x cold, <= 1x warm).")


def best(fn, runs):
    import time

    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def warm_defaults():
    import jax
    import numpy as np

    import jaxdp.poisson as po
    from jaxdp.core.accuracy import DEFAULT_ACCURACY
    from jaxdp.core.pld import DEFAULT_GRID
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _dpa import dpa_epsilon

    kw = dict(sampling_probability=0.01, num_steps=1000)
    sig = np.linspace(0.8, 3.0, 256)
    sweep = lambda: jax.block_until_ready(po.epsilon_for_delta_bracket(1e-5, noise_multiplier=sig, **kw).upper)  # noqa: E731
    one = lambda: float(po.epsilon_for_delta(1e-5, noise_multiplier=1.0, **kw))  # noqa: E731
    sweep(), one()
    t_sweep, t_one = best(sweep, RUNS), best(one, RUNS)
    loop = lambda: [dpa_epsilon(float(x), 0.01, 1000, 1e-5) for x in sig]  # noqa: E731
    t_loop = best(loop, 1)
    t_dpa_one = best(lambda: dpa_epsilon(1.0, 0.01, 1000, 1e-5), RUNS)
    b = po.epsilon_for_delta_bracket(1e-5, noise_multiplier=sig, **kw)
    lo, up = np.asarray(b.lower), np.asarray(b.upper)
    ref = po.epsilon_for_delta_bracket(1e-5, noise_multiplier=sig, grid=DEFAULT_GRID, **kw)
    rlo, rup = np.asarray(ref.lower), np.asarray(ref.upper)
    width = float(np.max((up - lo) / up))
    off = float(np.max(np.abs(up - rup) / up))
    consistent = bool(np.all((lo <= rup) & (rlo <= up)))
    print(f"\nDefault settings (accuracy={DEFAULT_ACCURACY:g}), warm, in one process (best of {RUNS}; the "
          "dp_accounting loop once):\n")
    print("| what | jaxdp (s) | dp_accounting (s) | ratio |")
    print("|---|---|---|---|")
    print(f"| 256-sigma Poisson eps sweep, sigma in [0.8, 3] | {t_sweep:.3f} | {t_loop:.2f} | {t_loop / t_sweep:.1f}x |")
    print(f"| one Poisson eps, sigma 1 | {t_one:.4f} | {t_dpa_one:.3f} | {t_dpa_one / t_one:.1f}x |")
    print(f"\nSweep values against the 2^18-cell grid's brackets: widest jaxdp bracket {width:.4f} (asked "
          f"<= {DEFAULT_ACCURACY:g}), largest distance of the returned value from the reference's upper end "
          f"{off:.2e} relative, brackets consistent: {consistent}.")


if __name__ == "__main__":
    main()
    warm_defaults()
