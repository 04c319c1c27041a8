"""Values of the stable entry points, stored before the issue-16 refactor and reproduced after it.

``python tests/_entry_table.py OUT.json`` evaluates :data:`CALLS` with whatever ``jaxdp`` is on the
path and writes ``{name: [values]}``.  ``tests/entry_points_before.json`` was written this way from
commit 326d8b9 (before the closed forms, the adjacency words and the PLD engine moved), and
``tests/test_entry_table.py`` recomputes every value with the current code.  Small one-stage grids
and single-epoch shuffling keep the programs cheap; the discretisation is the same before and after,
so the values must agree to float rounding.
"""

from __future__ import annotations

import json
import sys

import numpy as np

X = np.arange(21.0)


def _binom(n, p):
    from math import comb

    return np.array([comb(n, int(k)) * p**k * (1 - p) ** (n - k) for k in X])


def calls():
    import jax.numpy as jnp

    import jaxdp
    from jaxdp import calibrate, poisson, pufferfish as pf, shuffle as sh
    from jaxdp.core.pld import Grid
    from jaxdp.shuffle import asymptotics, closed_form

    g = Grid(size=2**12)
    po = dict(sampling_probability=0.01, num_steps=1000, grid=g)
    a3 = jnp.array([0.01, 0.1, 0.5])
    wi, wj = _binom(20, 0.5), _binom(20, 0.6)
    return {
        "poisson.epsilon_for_delta": lambda: poisson.epsilon_for_delta(1e-5, noise_multiplier=jnp.array([0.8, 1.0, 2.0]), **po),
        "poisson.epsilon_for_delta_bracket.lower": lambda: poisson.epsilon_for_delta_bracket(
            1e-5, noise_multiplier=jnp.array([0.8, 1.0, 2.0]), **po).lower,
        "poisson.delta_for_epsilon": lambda: poisson.delta_for_epsilon(jnp.array([0.5, 1.0, 2.0]), noise_multiplier=1.0, **po),
        "poisson.tradeoff": lambda: poisson.tradeoff(a3, noise_multiplier=1.0, sampling_probability=0.01, num_steps=100, grid=g),
        "poisson.mu_clt": lambda: jnp.stack([
            poisson.mu_clt_bu(noise_multiplier=1.0, sampling_probability=0.01, num_steps=1000),
            poisson.mu_clt_dong_roth_su(noise_multiplier=1.0, sampling_probability=0.01, num_steps=1000)]),
        "shuffle.delta_gap": lambda: jnp.stack([sh.delta_gap(noise_multiplier=1.0, num_rounds=1000.0, method=m)
                                                for m in ("exact", "berry_esseen", "linear_test", "clt", "edgeworth")]),
        "shuffle.tradeoff": lambda: sh.tradeoff(a3, noise_multiplier=1.0, num_rounds=1000.0),
        "shuffle.tradeoff.reverse": lambda: sh.tradeoff(a3, noise_multiplier=1.0, num_rounds=1000.0, reverse=True),
        "shuffle.tradeoff.clt": lambda: sh.tradeoff(a3, noise_multiplier=1.0, num_rounds=1000.0, num_epochs=4, method="clt"),
        "shuffle.closed_form": lambda: jnp.stack([closed_form.delta_berry_esseen(1.0, 1000.0), closed_form.delta_b(1.0, 1000.0),
                                                  closed_form.variance(1.0), closed_form.rho(1.0)]),
        "shuffle.asymptotics": lambda: jnp.stack([asymptotics.mu_clt(1.0, 1000.0, 4.0), asymptotics.clt_ratio(1.0),
                                                  asymptotics.mu_poisson_drs(1.0, 0.01, 1000.0)]),
        "calibrate.rounds": lambda: jnp.stack(calibrate.rounds(delta_gap=0.05, noise_multiplier=2.0, method="clt")),
        "calibrate.noise_multiplier_for_mu": lambda: calibrate.noise_multiplier_for_mu(
            1.0, sampling="poisson", sampling_probability=0.01, num_steps=1000),
        "calibrate.poisson_noise_multiplier": lambda: calibrate.poisson_noise_multiplier(
            1.0, 1e-5, sampling_probability=0.01, num_steps=1000, grid=g).value,
        "tradeoff.gaussian": lambda: jnp.stack([jaxdp.core.tradeoff.gaussian(0.1, 1.0), jaxdp.core.tradeoff.gaussian_delta(1.0, 1.0),
                                                jaxdp.core.tradeoff.gaussian_epsilon(1e-5, 1.0)]),
        "pufferfish.calibrate_laplace": lambda: jnp.stack([pf.calibrate_laplace(X, X, alpha=2.0, epsilon=1.0, method=m, weights_i=wi,
                                                                                weights_j=wj) for m in ("theorem1", "tight")]),
        "pufferfish.calibrate_gaussian": lambda: pf.calibrate_gaussian(X, X, alpha=2.0, epsilon=1.0, weights_i=wi, weights_j=wj),
    }


def _numbers(x):
    x = getattr(x, "value", x)  # a calibrate.Solution: its value
    return np.atleast_1d(np.asarray(x, dtype=np.float64)).ravel().tolist()


def evaluate():
    return {name: _numbers(fn()) for name, fn in calls().items()}


if __name__ == "__main__":
    out = evaluate()
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh, indent=1)
    print(sum(len(v) for v in out.values()), "values")
