"""Poisson-subsampled Gaussian accountant.

References: dp_accounting 0.6.0 PLD accountant (computed in the test), the issue's known values
(dp_accounting optimistic 1.818237 at a 2e-5 grid, pessimistic 1.828244 at its default grid),
the spec's oracle (shuffle.md section 6: Poisson q = 1/M over M steps, remove 0.038017, add
0.035645), and central finite differences for gradients.
"""

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdp import poisson
from jaxdp.core.pld import DEFAULT_GRID

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))


def test_known_value_bracket():
    b = poisson.epsilon_for_delta_bracket(1e-5, noise_multiplier=1.0, sampling_probability=0.01, num_steps=1000)
    lo, up = float(b.lower), float(b.upper)
    assert up >= 1.8182 and lo <= 1.8283
    # the default accuracy= (jaxdp.core.accuracy.DEFAULT_ACCURACY) is a 1%-wide certified bracket
    assert (up - lo) / up <= 0.01
    # the value returned by the stable entry point is the certified upper end
    assert float(poisson.epsilon_for_delta(1e-5, noise_multiplier=1.0, sampling_probability=0.01, num_steps=1000)) == up


@pytest.mark.acceptance  # README suite budget (issue 18): compiles several PLD accountant programs, 10-40 s of XLA
def test_spec_oracle_directions():
    # shuffle.md section 6: Poisson with q = 1/M over M = 10,000 steps, delta = 1e-5
    M = 10000
    kw = dict(noise_multiplier=1.0, sampling_probability=1.0 / M, num_steps=M)
    r = poisson.epsilon_for_delta_bracket(1e-5, direction="remove", **kw)
    a = poisson.epsilon_for_delta_bracket(1e-5, direction="add", **kw)
    assert float(r.lower) - 1e-4 <= 0.038017 <= float(r.upper) + 1e-4
    assert float(a.lower) - 1e-4 <= 0.035645 <= float(a.upper) + 1e-4
    both = poisson.epsilon_for_delta(1e-5, **kw)
    np.testing.assert_allclose(both, max(float(r.upper), float(a.upper)))


@pytest.mark.acceptance
def test_against_dp_accounting_subset():
    dpa = pytest.importorskip("dp_accounting")  # noqa: F841
    from _dpa import dpa_epsilon

    pts = [(1e-3, 1000, 0.5, 1e-5), (0.01, 100, 1.0, 1e-8), (0.1, 1000, 2.0, 1e-5), (0.5, 10, 1.0, 1e-5), (1e-4, 10000, 1.0, 1e-5)]
    q, T, s, d = (np.array(c) for c in zip(*pts))
    up = np.asarray(poisson.epsilon_for_delta(d, noise_multiplier=s, sampling_probability=q, num_steps=T))
    # dp_accounting at interval 1e-5: its default 1e-4 is too coarse for the eps = 0.038 point
    # (there it gives 0.039965; at 1e-5 it converges to 0.038036, see benchmarks/results/poisson_accuracy.md)
    ref = np.array([dpa_epsilon(p[2], p[0], p[1], p[3], interval=1e-5) for p in pts])
    np.testing.assert_allclose(up, ref, rtol=0.01)


@pytest.mark.acceptance  # README suite budget (issue 18): compiles several PLD accountant programs, 10-40 s of XLA
def test_delta_for_epsilon_consistent_with_epsilon_for_delta():
    # one fixed grid for both directions of the round trip (accuracy= may refine them differently)
    kw = dict(noise_multiplier=1.0, sampling_probability=0.01, num_steps=1000, grid=DEFAULT_GRID)
    e = poisson.epsilon_for_delta(1e-5, **kw)
    d = poisson.delta_for_epsilon(e, **kw)
    # eps(delta) spends ~1e-3 delta on its delta-relative tails (pessimistically), delta(eps) uses
    # the absolute ones: the round trip lands just below delta (sound side), within 1e-5 relative
    assert float(d) <= 1e-5 * (1 + 1e-9)
    np.testing.assert_allclose(d, 1e-5, rtol=1e-5)
    b = poisson.delta_for_epsilon_bracket(1.0, **kw)
    assert 0 <= float(b.lower) <= float(b.upper) <= 1


def test_tradeoff_bracket_and_shape():
    a = jnp.linspace(0.0, 1.0, 11)
    b = poisson.tradeoff_bracket(a, noise_multiplier=jnp.array([1.0, 2.0]), sampling_probability=0.01, num_steps=1000)
    assert b.lower.shape == (2, 11)
    assert np.all(np.asarray(b.lower) <= np.asarray(b.upper) + 1e-12)
    assert np.all(np.asarray(b.lower) <= 1 - np.asarray(a) + 1e-12)
    assert np.all(np.diff(np.asarray(b.lower), axis=-1) <= 1e-12)
    # more noise -> curve further from 0 (less privacy loss)
    assert np.all(np.asarray(b.lower[1]) >= np.asarray(b.lower[0]) - 1e-12)


@pytest.mark.acceptance
def test_gradients_match_finite_differences_at_10_points():
    rng = np.random.default_rng(0)
    sig = rng.uniform(0.7, 4.0, 10)
    q = 10 ** rng.uniform(-3, -1, 10)
    T = 500

    def eps(s, qq):
        return poisson.epsilon_for_delta(1e-5, noise_multiplier=s, sampling_probability=qq, num_steps=T)

    f = jax.jit(jax.vmap(eps))
    gs = jax.jit(jax.vmap(jax.grad(eps, argnums=(0, 1))))(sig, q)
    # Finite differences need a step in the plateau where they have converged: eps of the
    # discretised PLD is piecewise smooth (slope kinks of relative size ~h at lattice points, which
    # large steps average over) and carries a float noise floor of ~3e-10 relative (which small
    # steps amplify).  Measured at these 10 points on the 2^18 grid (2026-11-29), worst |AD/FD - 1|
    # for d/dq at relative steps 1e-4 / 1e-5 / 1e-6 / 1e-7: 1.1e-4 / 1.6e-5 / 3.4e-4 / 2e-3.  On the
    # default accuracy's 2^16 grid (2026-12-05) the second point has a kink in sigma within a
    # relative 1e-5 of it: central differences there give 1.6e-3 (step 1e-5) and 1.1e-4 (1e-6),
    # the forward difference at 1e-6 gives 1.4e-5, i.e. AD returns the one-sided derivative, as it
    # should at a kink.  So each point is checked against the best of central, forward and backward
    # differences at the plateau steps 1e-5 and 1e-6 (all evaluated in one batched call).
    r = np.array([1e-5, 1e-6])[:, None]
    ss = np.concatenate([sig * (1 + r), sig * (1 - r), np.tile(sig, (4, 1)), sig[None]]).ravel()
    qq = np.concatenate([np.tile(q, (4, 1)), q * (1 + r), q * (1 - r), q[None]]).ravel()
    v = np.asarray(f(ss, qq)).reshape(9, 10)
    v0 = v[8]

    def worst(g, vp, vm, h):
        fds = [(vp - vm) / (2 * h), (vp - v0) / h, (v0 - vm) / h]
        return np.min([np.abs(np.asarray(g) / d - 1) for d in fds], axis=(0, 1))

    err_s = worst(gs[0], v[0:2], v[2:4], r * sig)
    err_q = worst(gs[1], v[4:6], v[6:8], r * q)
    assert np.all(err_s <= 1e-4), err_s
    assert np.all(err_q <= 1e-4), err_q


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(noise_multiplier=0.0, sampling_probability=0.1, num_steps=10), "noise_multiplier"),
        (dict(noise_multiplier=-1.0, sampling_probability=0.1, num_steps=10), "noise_multiplier"),
        (dict(noise_multiplier=1.0, sampling_probability=0.0, num_steps=10), "sampling_probability"),
        (dict(noise_multiplier=1.0, sampling_probability=1.5, num_steps=10), "sampling_probability"),
        (dict(noise_multiplier=1.0, sampling_probability=0.1, num_steps=0), "num_steps"),
        (dict(noise_multiplier=1.0, sampling_probability=0.1, num_steps=2.5), "num_steps"),
        (dict(noise_multiplier=float("nan"), sampling_probability=0.1, num_steps=10), "noise_multiplier"),
    ],
)
def test_invalid_inputs_raise_eagerly(kw, name):
    with pytest.raises(ValueError, match=name):
        poisson.epsilon_for_delta(1e-5, **kw)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, float("nan")])
def test_invalid_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        poisson.epsilon_for_delta(delta, noise_multiplier=1.0, sampling_probability=0.1, num_steps=10)


@pytest.mark.acceptance
def test_invalid_inputs_give_nan_under_jit():
    f = jax.jit(lambda s, q, t, d: poisson.epsilon_for_delta(d, noise_multiplier=s, sampling_probability=q, num_steps=t))
    out = f(jnp.array([1.0, -1.0, 1.0, 1.0, 1.0]), jnp.array([0.1, 0.1, 2.0, 0.1, 0.1]), jnp.array([10, 10, 10, 0, 10]), jnp.array([1e-5, 1e-5, 1e-5, 1e-5, 1.5]))
    out = np.asarray(out)
    assert np.isfinite(out[0]) and np.all(np.isnan(out[1:]))
    # jit equals eager on the valid entry
    np.testing.assert_allclose(out[0], poisson.epsilon_for_delta(1e-5, noise_multiplier=1.0, sampling_probability=0.1, num_steps=10))


def test_clt_mus():
    # closed forms at sigma = 1: e - 1 = 1.718..., DRS inner term by scipy
    from scipy.stats import norm

    mu_b = poisson.mu_clt_bu(noise_multiplier=1.0, sampling_probability=0.01, num_steps=10000)
    np.testing.assert_allclose(mu_b, 0.01 * np.sqrt(10000 * (np.e - 1)), rtol=1e-12)
    mu_d = poisson.mu_clt_dong_roth_su(noise_multiplier=1.0, sampling_probability=0.01, num_steps=10000)
    inner = np.e * norm.cdf(1.5) + 3 * norm.cdf(-0.5) - 2
    np.testing.assert_allclose(mu_d, np.sqrt(2) * 0.01 * 100 * np.sqrt(inner), rtol=1e-12)


@pytest.mark.acceptance  # README suite budget (issue 18): compiles several PLD accountant programs, 10-40 s of XLA
def test_summary_shares_one_pld_and_matches_the_entry_points():
    """poisson.summary converts one composed PLD into all three quantities: on a one-stage grid the
    entry points compose the same PLD (delta only places tails on two-stage grids), so each bracket
    must equal theirs (each of which the tests above check against dp_accounting and the spec)."""
    from jaxdp.core.pld import Grid

    g = Grid(size=2**12, stages=1)
    kw = dict(noise_multiplier=1.0, sampling_probability=0.01, num_steps=100, grid=g)
    d, e, a = np.array([1e-5, 1e-3]), np.array([0.5, 1.0]), np.array([0.0, 0.01, 0.3, 1.0])
    r = poisson.summary(d, e, a, **kw)
    for got, want in ((r["epsilon"], poisson.epsilon_for_delta_bracket(d, **kw)), (r["delta"], poisson.delta_for_epsilon_bracket(e, **kw)),
                      (r["tradeoff"], poisson.tradeoff_bracket(a, **kw))):
        # the same arithmetic in another program: the lower eps is a root search (~2e-11 apart), and
        # a delta is a float sum of terms of order 1 (summation order: ~1e-15 absolute)
        np.testing.assert_allclose(got.lower, want.lower, rtol=1e-9, atol=1e-14)
        np.testing.assert_allclose(got.upper, want.upper, rtol=1e-9, atol=1e-14)
    assert r["epsilon"].value is r["epsilon"].upper and r["tradeoff"].value is r["tradeoff"].lower
    # no epsilons: nothing computed for them
    assert np.shape(poisson.summary(d, [], a, **kw)["delta"].upper) == (0,)
    # bad input: a clear error eagerly, NaN under jit (for that quantity only)
    with pytest.raises(ValueError, match="delta"):
        poisson.summary([2.0], e, a, **kw)
    with pytest.raises(ValueError, match="noise_multiplier must be a scalar"):
        poisson.summary(d, e, a, **{**kw, "noise_multiplier": [1.0, 2.0]})
    bad = jax.jit(lambda dd: poisson.summary(dd, e, a, **kw)["epsilon"].upper)(jnp.array([1e-5, -1.0]))
    assert np.isfinite(bad[0]) and np.isnan(bad[1])
