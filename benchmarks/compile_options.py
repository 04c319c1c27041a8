"""XLA compiler options that trade warm speed for compile time, on the default Poisson query.

Run:  python benchmarks/compile_options.py      (idle machine; about a minute)

Each variant is one fresh process with jaxdp's persistent cache off (``JAXDP_CACHE_DIR=off``) and
the option added to ``jaxdp._config.COMPILER_OPTIONS``: the first eps(1e-5) at q 0.01, sigma 1,
T 1000 (compiles), then a 64-sigma batch (compiles its shape), then the batch warm (mean of 3).
Prints one markdown row per variant; the value column shows the options do not change the number.
"""

import json
import os
import subprocess
import sys
import time

VARIANTS = [{}, {"xla_backend_optimization_level": 1}, {"xla_llvm_disable_expensive_passes": True}]


def child(extra):
    t0 = time.perf_counter()
    import numpy as np

    from jaxdp import _config
    _config.COMPILER_OPTIONS.update(extra)
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
    print(f"| {json.dumps(extra) if extra else 'none (COMPILER_OPTIONS as shipped)'} | {t1 - t0:.2f} | {t2 - t1:.2f} | "
          f"{v:.9f} | {t3 - t2:.2f} | {(t4 - t3) / 3 * 1000 / 64:.2f} |")


def main():
    print("| extra option | import (s) | first eps (s) | eps | first 64-sigma batch (s) | warm (ms/value) |")
    print("|---|---|---|---|---|---|")
    env = dict(os.environ, JAXDP_CACHE_DIR="off")
    for extra in VARIANTS:
        out = subprocess.run([sys.executable, __file__, json.dumps(extra)], env=env, capture_output=True, text=True,
                             check=True)
        print(out.stdout.strip(), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        child(json.loads(sys.argv[1]))
    else:
        main()
