"""Where a cold call's time goes (issue 18): trace / lower / compile / run, per public entry point.

    python benchmarks/anatomy.py > benchmarks/results/anatomy.md

Each entry point runs in a fresh process with the persistent compilation cache off
(``JAXDP_CACHE_DIR=off``), so its first call traces, lowers and compiles everything it needs.  The
split comes from JAX's public monitoring events (``/jax/core/compile/jaxpr_trace_duration``,
``jaxpr_to_mlir_module_duration``, ``backend_compile_duration``), summed over every program the call
compiles (a jit traced inside another one is counted in both traces, so the parts can add up to more
than the first call).  The second call (same arguments) is the warm cost.
Peak RSS is the process's (``resource.getrusage``).  Default settings throughout (what a user gets).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time

CASES = {
    "poisson eps(1e-5), q 0.01, sigma 1, T 1000":
        "import jaxdp.poisson as po\n"
        "f = lambda: float(po.epsilon_for_delta(1e-5, noise_multiplier=1.0, sampling_probability=0.01, num_steps=1000))",
    "shuffled eps(1e-5), sigma 1, M 100, E 10":
        "import jaxdp.shuffle as sh\n"
        "f = lambda: float(sh.epsilon_for_delta(1e-5, noise_multiplier=1.0, num_rounds=100, num_epochs=10))",
    "shuffled gap, sigma 1, M 10000, E 1":
        "import jaxdp.shuffle as sh\n"
        "f = lambda: float(sh.delta_gap(noise_multiplier=1.0, num_rounds=1e4))",
    "account(RandomAllocation(Gaussian(2), 10, 100)).epsilon(1e-6)":
        "import jaxdp\nfrom jaxdp.events import Gaussian, RandomAllocation\n"
        "f = lambda: float(jaxdp.account(RandomAllocation(Gaussian(2.0), 10, 100)).epsilon(1e-6).value)",
}

CHILD = r'''
import json, resource, sys, time
t0 = time.perf_counter()
from jax import monitoring
acc = {"trace": 0.0, "lower": 0.0, "compile": 0.0, "programs": 0}
KEYS = {"/jax/core/compile/jaxpr_trace_duration": "trace",
        "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
        "/jax/core/compile/backend_compile_duration": "compile"}
def on(event, secs, **_):
    k = KEYS.get(event)
    if k:
        acc[k] += secs
        acc["programs"] += k == "compile"
monitoring.register_event_duration_secs_listener(on)
import jaxdp  # noqa
exec(sys.argv[1])
t_import = time.perf_counter() - t0
t1 = time.perf_counter(); v = f(); first = time.perf_counter() - t1
t2 = time.perf_counter(); f(); second = time.perf_counter() - t2
print(json.dumps(dict(import_s=t_import, first_s=first, second_s=second, value=v, **acc,
                      rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
'''


def table(env, compile_label):
    print(f"| entry point | import | first call | trace | lower | {compile_label} | programs | second call | peak RSS (MB) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, code in CASES.items():
        out = subprocess.run([sys.executable, "-c", CHILD, code], capture_output=True, text=True, env=env)
        if out.returncode:
            print(f"| {name} | failed: {out.stderr.strip().splitlines()[-1]} ||||||||")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {name} | {r['import_s']:.2f} | {r['first_s']:.2f} | {r['trace']:.2f} | {r['lower']:.2f} | "
              f"{r['compile']:.2f} | {r['programs']} | {r['second_s']:.3f} | {r['rss_mb']:.0f} |", flush=True)


def main():
    import tempfile

    print("# Anatomy of a cold call (benchmarks/anatomy.py)\n")
    print(f"{platform.machine()}, {os.cpu_count()} CPUs visible; started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          "fresh process per row; seconds.\n")
    print("Persistent cache off (everything compiles):\n")
    table(dict(os.environ, JAXDP_CACHE_DIR="off"), "XLA compile")
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, JAXDP_CACHE_DIR=d)
        for code in CASES.values():  # fill the cache
            subprocess.run([sys.executable, "-c", CHILD, code], capture_output=True, text=True, env=env)
        print("\nWarm persistent cache (a second process; the compile column is now loading from the cache):\n")
        table(env, "XLA compile or cache load")


if __name__ == "__main__":
    main()
