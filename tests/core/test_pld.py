"""The certified PLD engine against closed forms and exact enumerations.

References: the Gaussian profile (Balle & Wang 2018) evaluated with scipy; randomised response
composed k times enumerated exactly with Python fractions of binomial weights; the identities
f_{0,d}^{(x)E} = f_{0,1-(1-d)^E} and G_mu1 (x) G_mu2 = G_sqrt(mu1^2+mu2^2) (Dong, Roth & Su 2022).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxdp.core import pld, tradeoff as tf
from jaxdp.mechanisms import EpsilonDelta, Gaussian

SMALL = pld.Grid(size=2**14)


def gauss_delta_scipy(eps, mu):
    return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps + stats.norm.logcdf(-eps / mu - mu / 2))


@jax.jit
def _gauss_plds(sigma, k):
    return pld.self_compose(Gaussian(sigma), k, "remove", SMALL)


@pytest.mark.acceptance  # README suite budget (issue 18): compiles several PLD accountant programs, 10-40 s of XLA
@pytest.mark.parametrize("sigma,k,rtol", [(1.0, 1, 2e-5), (2.0, 10, 2e-5), (0.8, 1000, 0.25), (5.0, 20000, 0.25)])
def test_gaussian_bracket_contains_closed_form(sigma, k, rtol):
    P = _gauss_plds(sigma, k)
    mu = math.sqrt(k) / sigma
    eps = np.array([0.0, 0.25 * mu, mu, mu**2 / 2 + 2 * mu])
    exact = gauss_delta_scipy(eps, mu)
    lo, up = np.asarray(P.delta_lower(eps)), np.asarray(P.delta_upper(eps))
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= up + 1e-12), (lo, exact, up)
    # CTD is tight: its error is set by the lattice spacing h, which at this small grid (2^14
    # cells) is ~0.03-0.1 for the long compositions, where delta is steep in eps: there the
    # eps bracket below is the meaningful tightness check (delta off by 25% = eps off by 3e-4)
    assert np.all(up - exact <= rtol * exact + 1e-9)
    for d in [1e-5, 1e-8]:
        e_true = float(tf.gaussian_epsilon(d, mu))
        assert float(P.epsilon_lower(d)) <= e_true <= float(P.epsilon_upper(d)) + 1e-12
        # at 2^14 cells the Hoeffding lower bound is loose for k = 20000 (width ~ h sqrt(k))
        assert float(P.epsilon_upper(d)) - float(P.epsilon_lower(d)) <= 0.05 * e_true + 1e-3


def test_composition_of_eps0_delta_is_exact():
    # f_{0,d}^{(x)E} = f_{0, 1-(1-d)^E}: the PLD path is exact here (atoms on the lattice)
    d = 0.01
    for E in [1, 7, 100]:
        P = pld.self_compose(EpsilonDelta(0.0, d), E, "remove", SMALL)
        target = 1 - (1 - d) ** E
        for eps in [0.0, 0.3, 2.0]:
            np.testing.assert_allclose(P.delta_upper(eps), target, atol=1e-9)
            np.testing.assert_allclose(P.delta_lower(eps), target, atol=1e-9)
        a = jnp.array([0.0, 0.1, 0.5, 0.9])
        np.testing.assert_allclose(P.tradeoff_lower(a), tf.eps_delta(a, 0.0, target), atol=1e-9)


def rr_delta_exact(eps0, k, eps):
    """k-fold randomised response, enumerated exactly (binomial law of the loss)."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    tot = 0.0
    for i in range(k + 1):
        loss = (k - 2 * i) * eps0
        w = math.comb(k, i) * p ** (k - i) * (1 - p) ** i
        tot += w * max(0.0, 1 - math.exp(eps - loss))
    return tot


@pytest.mark.parametrize("eps0,k", [(0.5, 1), (0.1, 50), (0.3, 400)])
def test_randomised_response_composition(eps0, k):
    P = pld.self_compose(EpsilonDelta(eps0, 0.0), k, "remove", SMALL)
    for eps in [0.0, 0.5 * eps0 * math.sqrt(k), 2 * eps0 * math.sqrt(k)]:
        ex = rr_delta_exact(eps0, k, eps)
        assert float(P.delta_lower(eps)) - 1e-12 <= ex <= float(P.delta_upper(eps)) + 1e-12


def test_heterogeneous_gaussian_composition_identity():
    mu1, mu2 = 0.6, 1.3
    P = pld.compose([(Gaussian(1 / mu1), 1), (Gaussian(1 / mu2), 1)], "remove", SMALL)
    mu = math.hypot(mu1, mu2)
    a = jnp.array([1e-4, 0.01, 0.1, 0.3, 0.6])
    g = np.asarray(tf.gaussian(a, mu))
    lo, up = np.asarray(P.tradeoff_lower(a)), np.asarray(P.tradeoff_upper(a))
    assert np.all(lo <= g + 1e-12) and np.all(g <= up + 1e-12)
    assert np.max(up - lo) < 5e-3  # 2^14 cells
    c = P.curve(pessimistic=True)
    np.testing.assert_allclose(c.gdp_mu(a_min=1e-9, a_max=1 - 1e-6), mu, rtol=2e-3)
    assert float(c.gdp_mu(a_min=1e-9, a_max=1 - 1e-6)) >= mu - 1e-9  # pessimistic curve: mu not below truth
    np.testing.assert_allclose(c.tv_gap(), 2 * stats.norm.cdf(mu / 2) - 1, atol=1e-6)


def test_curve_composition_through_engine_matches_mechanism():
    # a piecewise-linear curve composed through CurvePair equals composing the mechanism itself
    e, d = 0.4, 0.0
    astar = (1 - d) / (1 + np.exp(e))
    c = tf.PiecewiseLinear(a=jnp.array([0.0, astar, 1 - d]), f=jnp.array([1 - d, np.exp(-e) * (1 - d - astar), 0.0]))
    lo, up = tf.compose([(c, 9)], grid=SMALL)
    for eps in [0.0, 0.5, 1.5]:
        ex = rr_delta_exact(e, 9, eps)
        # the pessimistic curve has the larger profile, the optimistic one the smaller
        assert float(lo.delta(eps)) >= ex - 1e-9
        assert float(up.delta(eps)) <= ex + 1e-9


@pytest.mark.acceptance  # README suite budget (issue 18): gradients against finite differences: forward, reverse and batched programs, 10-20 s of XLA
def test_gradients_finite_and_match_fd():
    f = jax.jit(lambda s: pld.self_compose(Gaussian(s), 50, "remove", SMALL).epsilon_upper(1e-6))
    g = jax.grad(f)(2.0)
    fd = (f(2.0 + 1e-5) - f(2.0 - 1e-5)) / 2e-5
    assert np.isfinite(g)
    np.testing.assert_allclose(g, fd, rtol=1e-4)
