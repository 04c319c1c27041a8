"""Warm multi-epoch shuffled gap and eps at the default grid (sigma 1, M 100, E 10): best of 3 after one call.

Run: python benchmarks/shuffle_warm.py  (compare with a checkout before the shared-PLD change for the before figure)."""
import time, jax, jaxdp.shuffle as sh, numpy as np
jax.config.update("jax_compilation_cache_dir", None)
def t(f):
    jax.block_until_ready(f()); ts=[]
    for _ in range(3):
        t0=time.time(); jax.block_until_ready(f()); ts.append(time.time()-t0)
    return min(ts)
print("gap E=10 warm", t(lambda: sh.delta_gap_bracket(noise_multiplier=1.0, num_rounds=100.0, num_epochs=10).upper))
print("eps E=10 warm", t(lambda: sh.epsilon_for_delta(1e-5, noise_multiplier=1.0, num_rounds=100.0, num_epochs=10)))
