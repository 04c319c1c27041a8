"""The accuracy ladder's reference widths (jaxdp.core.accuracy.REFERENCE_WIDTHS), and what each rung costs.

    python benchmarks/accuracy_ladder.py > benchmarks/results/accuracy_ladder.md

For each rung of ``jaxdp.core.accuracy.LADDER``: the certified bracket on Poisson eps(1e-5) at
q = 0.01, sigma = 1, T = 1000 (the reference query), its relative width, the first call (compile
and run, persistent cache off when run as ``JAXDP_CACHE_DIR=off``) and the warm cost per value of a
64-sigma batch in [0.8, 3] with the widest bracket of that batch.
"""

import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxdp.poisson as po
from jaxdp.core import accuracy as acc

Q = dict(sampling_probability=0.01, num_steps=1000)


def main():
    print(f"Reference query: Poisson eps(1e-5), q 0.01, sigma 1, T 1000; {jax.devices()[0].platform}.\n")
    print("| rung | grid | lower | upper | relative width | stored width | first call (s) | warm, 64-sigma batch (ms/value) | widest of the batch |")
    print("|---|---|---|---|---|---|---|---|---|")
    s = jnp.linspace(0.8, 3.0, 64)
    for i, g in enumerate(acc.LADDER):
        t0 = time.perf_counter()
        b = po.epsilon_for_delta_bracket(1e-5, noise_multiplier=1.0, grid=g, **Q)
        lo, up = float(b.lower), float(b.upper)
        first = time.perf_counter() - t0
        bb = po.epsilon_for_delta_bracket(1e-5, noise_multiplier=s, grid=g, **Q)
        jax.block_until_ready(bb.upper)
        t0 = time.perf_counter()
        bb = po.epsilon_for_delta_bracket(1e-5, noise_multiplier=s, grid=g, **Q)
        jax.block_until_ready(bb.upper)
        per = (time.perf_counter() - t0) / s.size * 1e3
        wb = float(np.max((np.asarray(bb.upper) - np.asarray(bb.lower)) / np.asarray(bb.upper)))
        print(f"| {i} | {g.size} cells, {g.num_stages()} stage(s) | {lo:.6f} | {up:.6f} | {(up - lo) / up:.3g} | "
              f"{acc.REFERENCE_WIDTHS[i]:.3g} | {first:.1f} | {per:.1f} | {wb:.3g} |", flush=True)


if __name__ == "__main__":
    main()
