"""1e5-point (sigma, M) sweep of exact single-epoch gaps, sharded and unsharded (issue 6).

Run:  python benchmarks/sweep_gaps.py  (writes benchmarks/results/sweep_gaps.md)

The grid: 250 sigma log-spaced in [0.3, 50] x 400 M log-spaced in [1, 1e10] (100,000 points) of
``jaxdp.shuffle.delta_gap(method="exact")`` through ``jaxdp.sweep.sweep`` in chunks of 2048.  Run
twice, each in a fresh process: on one CPU device, and sharded over two host devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=2``, one per core).  Each run reports wall
time (after one warm-up chunk, i.e. compilation excluded and reported), peak RSS, and saves npz
and CSV; the two results must be identical.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

N_SIGMA, N_M = 250, 400


def child(devices: int, outdir: str):
    import resource

    import jax

    import jaxdp.shuffle as sh
    from jaxdp.sweep import grid, sweep

    pts = grid(noise_multiplier=np.geomspace(0.3, 50.0, N_SIGMA), num_rounds=np.geomspace(1.0, 1e10, N_M))

    def fn(noise_multiplier, num_rounds):
        return sh.delta_gap(noise_multiplier=noise_multiplier, num_rounds=num_rounds, method="exact")

    t0 = time.perf_counter()
    sweep(fn, {k: v[:2048] for k, v in pts.items()}, chunk_size=2048, progress=False)  # compile
    t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = sweep(fn, pts, chunk_size=2048, sharded=devices > 1, progress=True,
                out_npz=os.path.join(outdir, f"gaps_{devices}.npz"), out_csv=os.path.join(outdir, f"gaps_{devices}.csv"))
    wall = time.perf_counter() - t0
    v = res["value"]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(dict(devices=jax.device_count(), points=int(v.size), wall=wall, compile=t_compile, rss_mib=rss,
                          nan=int(np.isnan(v).sum()), min=float(np.nanmin(v)), max=float(np.nanmax(v)),
                          csv_mib=os.path.getsize(os.path.join(outdir, f"gaps_{devices}.csv")) / 2**20)))


def main(out="benchmarks/results/sweep_gaps.md"):
    outdir = tempfile.mkdtemp(prefix="jaxdp_sweep_")
    runs = []
    for devices in (1, 2):
        env = dict(os.environ)
        if devices > 1:
            env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
        p = subprocess.run([sys.executable, __file__, "child", str(devices), outdir], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-3000:])
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        print(runs[-1], flush=True)
    a = np.load(os.path.join(outdir, "gaps_1.npz"))["value"]
    b = np.load(os.path.join(outdir, "gaps_2.npz"))["value"]
    identical = bool(np.array_equal(a, b, equal_nan=True))
    lines = ["# 1e5-point sweep of exact single-epoch gaps", "",
             "Command: `python benchmarks/sweep_gaps.py` (2-core CPU).", "",
             f"Grid: {N_SIGMA} sigma log-spaced in [0.3, 50] x {N_M} M log-spaced in [1, 1e10] = {N_SIGMA * N_M:,} points of "
             "`jaxdp.shuffle.delta_gap(method=\"exact\")` via `jaxdp.sweep.sweep`, chunks of 2048 (memory bounded by the chunk).", "",
             "| devices | wall (s, after compilation) | compile (s) | ms per point | peak RSS (MiB) | NaN | gap range | CSV (MiB) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['devices']} | {r['wall']:.1f} | {r['compile']:.1f} | {1e3 * r['wall'] / r['points']:.2f} | {r['rss_mib']:.0f} | "
                     f"{r['nan']} | [{r['min']:.3g}, {r['max']:.3g}] | {r['csv_mib']:.1f} |")
    lines += ["", f"Sharded (2 host devices) and unsharded results identical: **{identical}** (`np.array_equal`, bitwise).",
              f"Within 10 minutes: {', '.join(str(r['devices']) + ' device(s): ' + ('yes' if r['wall'] <= 600 else 'NO') for r in runs)}."]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(int(sys.argv[2]), sys.argv[3])
    else:
        main(*sys.argv[1:])
