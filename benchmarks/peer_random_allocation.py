"""The random-allocation peer `pld-accounting` 2.0 (Feldman & Shenfeld, GEOM, 1e-2) and jaxdp, side by side.

Run:  python benchmarks/peer_random_allocation.py E [lower|upper|both]
(E = number of epochs; sigma = 1, t = M = 100, delta = 1e-5).  Prints, one line each as soon as it
is computed: jaxdp's certified bracket (first call including compilation, then a compiled call),
the peer's upper (DOMINATES) and/or lower (IS_DOMINATED) eps with its time, and the time ratio
peer / jaxdp (compiled) in the same run.  bench_shuffle.py measures the same inside its table, but
only writes once both epochs are done; the peer is slow on this machine.
"""

import sys
import time

import jax

import jaxdp.shuffle as sh
from PLD_accounting import AllocationSchemeConfig, BoundType, ConvolutionMethod, PrivacyParams
from PLD_accounting import gaussian_allocation_epsilon_configurable as eps_conf

E = int(sys.argv[1]) if len(sys.argv) > 1 else 1
which = sys.argv[2] if len(sys.argv) > 2 else "both"

f = jax.jit(lambda: sh.epsilon_for_delta_bracket(1e-5, noise_multiplier=1.0, num_rounds=100.0, num_epochs=E))
t = time.perf_counter()
b = jax.block_until_ready(f())
t_first = time.perf_counter() - t
t = time.perf_counter()
b = jax.block_until_ready(f())
t_j = time.perf_counter() - t
print(f"jaxdp E={E} bracket [{float(b.lower):.6f}, {float(b.upper):.6f}] first call {t_first:.1f} s, compiled {t_j:.2f} s", flush=True)

cfg = AllocationSchemeConfig(loss_discretization=1e-2, convolution_method=ConvolutionMethod.GEOM)
p = PrivacyParams(sigma=1.0, num_steps=100, num_epochs=E, delta=1e-5)
bts = {"upper": (BoundType.DOMINATES,), "lower": (BoundType.IS_DOMINATED,)}.get(which, (BoundType.DOMINATES, BoundType.IS_DOMINATED))
for bt in bts:
    t = time.perf_counter()
    v = eps_conf(params=p, config=cfg, bound_type=bt)
    tp = time.perf_counter() - t
    print(f"peer E={E} {bt.name} {v:.6f} {tp:.1f} s; ratio peer / jaxdp (compiled) {tp / t_j:.1f}x, "
          f"peer / jaxdp (first call incl. compilation) {tp / t_first:.1f}x", flush=True)
