"""Warm (compiled) figures of the benchmarks in RESULTS.md, for before/after comparisons of one change.

    python benchmarks/warm_check.py LABEL            # this checkout
    PYTHONPATH=/path/to/old/worktree python benchmarks/warm_check.py old

Run both in turn on an idle machine (not side by side: two processes share two cores) and compare
the printed dicts; issue 18 allows no warm figure to regress by more than 10%.  Each figure is the
minimum wall time over a few calls after one warm-up call (which compiles), in seconds:

* ``single 3*2^15`` / ``sweep 256 3*2^13``: bench_poisson.py's one eps(delta) and 256-sigma sweep
  at its hand-picked one-stage grids, jitted by the user as there;
* ``single default``: ``poisson.epsilon_for_delta`` at the default grid, as a user calls it;
* ``calibrate 32``: bench_calibrate.py's 32 Poisson targets (one call, new targets each time);
* ``shuffle 1024 curve+gap``: bench_shuffle.py's 1024-pair single-epoch batch;
* ``shuffled eps E10``: shuffle_warm.py's multi-epoch eps at the default grid;
* ``account poisson``: ``jaxdp.account`` on the same Poisson event as ``single default``.
"""

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxdp
import jaxdp.calibrate as cal
import jaxdp.poisson as po
import jaxdp.shuffle as sh
from jaxdp.core.pld import Grid
from jaxdp.events import Gaussian, PoissonSampled, SelfComposed
from jaxdp.mechanisms import shuffled as ex


def best(f, reps):
    jax.block_until_ready(f())
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(f())
        times.append(time.perf_counter() - t)
    return min(times)


def main(label):
    res = {}
    kw = dict(sampling_probability=0.01, num_steps=1000)
    g1, g2 = Grid(size=3 * 2**15, stages=1), Grid(size=3 * 2**13, stages=1)
    f1 = jax.jit(lambda s: po.epsilon_for_delta(1e-5, noise_multiplier=s, grid=g1, **kw))
    res["single 3*2^15"] = best(lambda: f1(1.0), 9)
    f2 = jax.jit(lambda s: po.epsilon_for_delta(1e-5, noise_multiplier=s, grid=g2, **kw))
    sweep = jnp.asarray(np.linspace(0.8, 3.0, 256))
    res["sweep 256 3*2^13"] = best(lambda: f2(sweep), 3)
    res["single default"] = best(lambda: po.epsilon_for_delta(1e-5, noise_multiplier=1.0, **kw), 7)
    targets, calls = jnp.asarray(np.geomspace(0.5, 8.0, 32)), [0]

    def calibrate():
        calls[0] += 1  # new targets each call: no cached answer
        return cal.poisson_noise_multiplier(targets * (1 + 1e-9 * calls[0]), 1e-5, **kw).value

    res["calibrate 32"] = best(calibrate, 1)
    rng = np.random.default_rng(0)
    sig = jnp.asarray(10 ** rng.uniform(np.log10(0.3), np.log10(50.0), 1024))
    rounds = jnp.asarray(10 ** rng.uniform(0.0, 10.0, 1024))
    a = jnp.linspace(0.01, 0.9, 8)
    res["shuffle 1024 curve+gap"] = best(lambda: ex.tradeoff_curves(a, sig, rounds, return_gap=True), 1)
    res["shuffled eps E10"] = best(lambda: sh.epsilon_for_delta(1e-5, noise_multiplier=1.0, num_rounds=100, num_epochs=10), 2)
    event = SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)
    res["account poisson"] = best(lambda: jaxdp.account(event).epsilon(1e-5).value, 5)
    print(label, {k: round(v, 4) for k, v in res.items()}, flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "this checkout")
