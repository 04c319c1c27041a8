"""Trade-off closed forms against scipy (independent implementation of the normal law)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxdp.core import tradeoff as tf


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 3.0])
def test_gaussian_matches_scipy(mu):
    a = np.array([1e-12, 1e-6, 0.01, 0.2, 0.5, 0.9, 1 - 1e-9])
    expect = stats.norm.cdf(stats.norm.ppf(1 - a) - mu)  # scipy reference
    np.testing.assert_allclose(tf.gaussian(a, mu), expect, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
def test_gaussian_delta_is_conjugate_of_curve(mu):
    # delta(eps) = sup_a 1 - a e^eps - G_mu(a), by brute force over a fine grid (scipy)
    a = np.concatenate([np.geomspace(1e-12, 0.5, 200000), np.linspace(0.5, 1, 20000)])
    g = stats.norm.cdf(stats.norm.ppf(1 - a) - mu)
    for eps in [0.0, 0.5, 1.0, 3.0]:
        brute = np.max(1 - a * np.exp(eps) - g)
        np.testing.assert_allclose(tf.gaussian_delta(eps, mu), brute, rtol=1e-6, atol=1e-10)  # brute force resolves ~1e-11


def test_gaussian_epsilon_roundtrip_and_grad():
    mu = jnp.array([0.5, 1.0, 2.0])
    eps = tf.gaussian_epsilon(1e-5, mu)
    np.testing.assert_allclose(tf.gaussian_delta(eps, mu), 1e-5, rtol=1e-9)
    g = jax.grad(lambda m: tf.gaussian_epsilon(1e-5, m))(1.0)
    fd = (tf.gaussian_epsilon(1e-5, 1.0 + 1e-6) - tf.gaussian_epsilon(1e-5, 1.0 - 1e-6)) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-5)


def test_eps_delta_curve_profile():
    # f_{eps,delta} has profile delta + (1-delta)(e^eps - e^eps')_+/(1+e^eps) ... check conjugate numerically
    e, d = 0.7, 0.01
    a = np.linspace(0, 1, 400001)
    f = np.asarray(tf.eps_delta(a, e, d))
    assert np.all(np.diff(f) <= 1e-15) and np.all(f <= 1 - a + 1e-15)
    # at eps' = eps the profile equals delta (definition of (eps, delta)-DP, tight)
    np.testing.assert_allclose(np.max(1 - a * np.exp(e) - f), d, atol=1e-6)


def test_piecewise_linear_conversions_on_eps_delta_curve():
    e, d = 1.0, 0.05
    astar = (1 - d) / (1 + np.exp(e))
    c = tf.PiecewiseLinear(a=jnp.array([0.0, astar, 1 - d]), f=jnp.array([1 - d, np.exp(-e) * (1 - d - astar), 0.0]))
    a = jnp.linspace(0, 1, 101)
    np.testing.assert_allclose(c(a), tf.eps_delta(a, e, d), atol=1e-12)
    np.testing.assert_allclose(c.delta(e), d, atol=1e-12)
    np.testing.assert_allclose(c.tv_gap(), 1 - 2 * (1 - d) / (1 + np.exp(e)) + 0 * d, atol=1e-12)
    inv = c.inverse()
    np.testing.assert_allclose(inv(a), tf.eps_delta(a, e, d), atol=1e-12)  # symmetric curve
    assert float(c.gdp_mu()) == np.inf or float(c.gdp_mu()) > 0
