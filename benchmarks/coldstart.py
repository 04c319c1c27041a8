"""Cold start, side by side: whole processes of jaxdp and dp_accounting at issue 18's settings.

Run:  python benchmarks/coldstart.py [RUNS]      (default 3 runs of each; idle machine)

Every figure is one fresh Python process timed by ``/usr/bin/time`` (wall seconds and peak RSS):

* ``cold``: jaxdp's persistent compilation cache switched off (``JAXDP_CACHE_DIR=off``), so the
  process compiles everything it runs;
* ``warm cache``: a cache directory filled by one unmeasured process first, then measured;
* dp_accounting has no compilation: its rows are whole processes of the same query.

Prints a markdown table (median and min-max over RUNS, peak RSS median) and the ratios of the
medians.  Warm in-process figures (sweeps, one eps after compilation) are in bench_poisson.py.
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


if __name__ == "__main__":
    main()
