"""The random-allocation peer alone: `pld-accounting` 2.0 (Feldman & Shenfeld), GEOM, 1e-2.

Run:  python benchmarks/peer_random_allocation.py E   (E = number of epochs; sigma = 1, t = M = 100,
delta = 1e-5).  Prints the peer's upper (DOMINATES) and lower (IS_DOMINATED) eps with their times,
one line each, as soon as each is computed (bench_shuffle.py measures the same inside its table,
but only writes once both epochs are done; the peer is slow on this machine).
"""

import sys
import time

from PLD_accounting import AllocationSchemeConfig, BoundType, ConvolutionMethod, PrivacyParams
from PLD_accounting import gaussian_allocation_epsilon_configurable as eps_conf

E = int(sys.argv[1]) if len(sys.argv) > 1 else 1
cfg = AllocationSchemeConfig(loss_discretization=1e-2, convolution_method=ConvolutionMethod.GEOM)
p = PrivacyParams(sigma=1.0, num_steps=100, num_epochs=E, delta=1e-5)
for bt in (BoundType.DOMINATES, BoundType.IS_DOMINATED):
    t = time.perf_counter()
    v = eps_conf(params=p, config=cfg, bound_type=bt)
    print(E, bt, v, time.perf_counter() - t, flush=True)
