"""XLA compiler options that trade warm speed for compile time, on the default Poisson query.

Run:  python benchmarks/compile_options.py [RUNS]      (default 3; idle machine; about a minute a run)

Each variant is one fresh process with jaxdp's persistent cache off (``JAXDP_CACHE_DIR=off``) and
the option given to XLA through ``XLA_FLAGS`` (set before JAX starts; jaxdp's own
``COMPILER_OPTIONS`` still apply on top, and XLA rejects a misspelt flag): the first eps(1e-5) at q 0.01, sigma 1,
T 1000 (compiles), then a 64-sigma batch (compiles its shape), then the batch warm (mean of 3).
Prints one markdown row per variant, each time column the median of RUNS processes (the variants
interleaved, so drifting machine load hits them alike); the value column shows the flags do not
change the number.
"""

import os
import statistics
import subprocess
import sys
import time

VARIANTS = ["", "--xla_backend_optimization_level=1", "--xla_llvm_disable_expensive_passes=true"]


def child(flags):
    t0 = time.perf_counter()
    import numpy as np

    import jaxdp.poisson as po
    kw = dict(sampling_probability=0.01, num_steps=1000)
    t1 = time.perf_counter()
    v = float(po.epsilon_for_delta(1e-5, noise_multiplier=1.0, **kw))
    t2 = time.perf_counter()
    s = np.linspace(0.8, 3, 64)
    po.epsilon_for_delta(1e-5, noise_multiplier=s, **kw)
    t3 = time.perf_counter()
    for _ in range(3):
        po.epsilon_for_delta(1e-5, noise_multiplier=s, **kw)
    t4 = time.perf_counter()
    print(t1 - t0, t2 - t1, repr(v), t3 - t2, (t4 - t3) / 3 * 1000 / 64)


def main(runs):
    got = {flags: [] for flags in VARIANTS}
    for _ in range(runs):
        for flags in VARIANTS:
            env = dict(os.environ, JAXDP_CACHE_DIR="off", XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip())
            out = subprocess.run([sys.executable, __file__, "child", flags], env=env, capture_output=True, text=True,
                                 check=True)
            got[flags].append(out.stdout.split())
    print("| extra XLA flag | import (s) | first eps (s) | eps | first 64-sigma batch (s) | warm (ms/value) |")
    print("|---|---|---|---|---|---|")
    for flags, rows in got.items():
        imp, first, batch, warm = (statistics.median(float(r[i]) for r in rows) for i in (0, 1, 3, 4))
        values = {r[2] for r in rows}
        print(f"| {f'`{flags}`' if flags else 'none (as shipped)'} | {imp:.2f} | {first:.2f} | "
              f"{', '.join(sorted(values))} | {batch:.2f} | {warm:.2f} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
