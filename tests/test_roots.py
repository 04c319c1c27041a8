"""jaxdp.roots.find_root, the one root finder: both step rules against closed-form roots.

Expected values are closed forms: the root of p / x = t is p / t, of x^3 = t is t^(1/3), the
smallest integer n with 1000 / n <= 7 is ceil(1000 / 7) = 143; the Gaussian eps(delta) of G_mu is
checked by evaluating delta_G (jaxdp.closed_forms) on both sides of the returned value.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdp  # noqa: F401  (float64)
from jaxdp import closed_forms as cf
from jaxdp import roots
from jaxdp.core import tradeoff as tf

METHODS = ("chandrupatla", "bisection")


@pytest.mark.parametrize("method", METHODS)
def test_feasible_end_and_tolerance(method):
    # p / x <= t, decreasing in x: the smallest feasible x is p / t (= 1.5)
    r = roots.find_root(lambda x, p: p / x, 2.0, 3.0, decreasing=True, lower=1e-6, upper=1e6, lower_limit=1e-6,
                        upper_limit=1e6, log_scale=True, rtol=1e-12, method=method)
    assert int(r.result) == roots.SUCCESSFUL
    x, other = float(r.x), float(r.other)
    assert 3.0 / x <= 2.0 < 3.0 / other  # the answer evaluated feasible, the other end infeasible
    assert x == pytest.approx(1.5, rel=1e-11) and other < x
    # x^3 <= t, increasing: the largest feasible x is t^(1/3)
    r = roots.find_root(lambda x, p: x**3, 5.0, None, decreasing=False, lower=0.0, upper=10.0, lower_limit=0.0,
                        upper_limit=10.0, rtol=1e-13, method=method)
    assert float(r.x) ** 3 <= 5.0 and float(r.x) == pytest.approx(5.0 ** (1 / 3), rel=1e-12)
    assert float(r.residual) <= 0.0 < float(r.residual_other)


@pytest.mark.parametrize("method", METHODS)
def test_integer_limits_and_failures(method):
    f = lambda n, p: 1000.0 / n  # noqa: E731
    r = roots.find_root(f, 7.0, None, decreasing=True, lower=1.0, upper=1e6, lower_limit=1.0, upper_limit=1e6,
                        log_scale=True, integer=True, method=method)
    assert float(r.x) == math.ceil(1000 / 7) and float(r.other) == float(r.x) - 1  # adjacent integers
    # the whole range feasible: the feasible-side limit, flagged
    r = roots.find_root(f, 1e4, None, decreasing=True, lower=1.0, upper=10.0, lower_limit=1.0, upper_limit=10.0,
                        method=method)
    assert float(r.x) == 1.0 and bool(r.at_limit) and int(r.result) == roots.SUCCESSFUL
    # nothing feasible: INFEASIBLE and NaN, never a number
    r = roots.find_root(f, 1e-9, None, decreasing=True, lower=1.0, upper=10.0, lower_limit=1.0, upper_limit=10.0,
                        method=method)
    assert int(r.result) == roots.INFEASIBLE and math.isnan(float(r.x))
    # NaN from the function: NONFINITE
    r = roots.find_root(lambda x, p: jnp.nan * x, 1.0, None, decreasing=True, lower=1.0, upper=2.0, lower_limit=1.0,
                        upper_limit=2.0, method=method)
    assert int(r.result) == roots.NONFINITE and math.isnan(float(r.x))


def test_illinois_rule():
    # regula falsi with the Illinois rule on a fixed bracket (the Pufferfish exact scale's steps)
    r = roots.find_root(lambda x, p: x**3, 5.0, None, decreasing=False, lower=0.0, upper=10.0, lower_limit=0.0,
                        upper_limit=10.0, rtol=1e-13, max_steps=100, method="illinois")
    assert int(r.result) == roots.SUCCESSFUL and float(r.x) ** 3 <= 5.0
    assert float(r.x) == pytest.approx(5.0 ** (1 / 3), rel=1e-12)
    assert float(r.residual) == pytest.approx(float(r.x) ** 3 - 5.0, abs=1e-15)  # the true residual


def test_max_steps_still_returns_a_feasible_point():
    for method in METHODS:
        r = roots.find_root(lambda x, p: x**3, 5.0, None, decreasing=False, lower=0.0, upper=10.0, lower_limit=0.0,
                            upper_limit=10.0, rtol=1e-15, max_steps=3, method=method)
        assert int(r.result) == roots.MAX_STEPS and float(r.x) ** 3 <= 5.0
    with pytest.raises(ValueError, match="method"):
        roots.find_root(lambda x, p: x, 1.0, None, decreasing=False, lower=0.0, upper=2.0, method="newton")
    with pytest.raises(ValueError, match="illinois"):
        roots.find_root(lambda x, p: x, 1.0, None, decreasing=False, lower=0.0, upper=2.0, integer=True,
                        method="illinois")


def test_implicit_gradient_matches_the_closed_form():
    # x*(p, t) = p / t: dx/dp = 1 / t, dx/dt = -p / t^2
    def solve(p, t):
        r = roots.find_root(lambda x, q: q / x, t, p, decreasing=True, lower=1e-3, upper=1e3, lower_limit=1e-3,
                            upper_limit=1e3, log_scale=True, rtol=1e-13)
        return roots.implicit(lambda x, q: q / x, r.x, r.at_limit, t, p)

    gp, gt = jax.grad(solve, argnums=(0, 1))(3.0, 2.0)
    assert float(gp) == pytest.approx(0.5, rel=1e-9) and float(gt) == pytest.approx(-0.75, rel=1e-9)
    assert float(jax.jit(solve)(3.0, 2.0)) == pytest.approx(1.5, rel=1e-12)
    np.testing.assert_allclose(jax.vmap(solve)(jnp.array([1.0, 4.0]), jnp.array([2.0, 2.0])), [0.5, 2.0], rtol=1e-12)


def test_extreme_integer_with_margin():
    f = lambda n, p: 1000.0 / n  # noqa: E731
    # real bracket [142.5, 143.2] of 1000 / n <= 7: the smallest feasible integer is 143
    assert float(roots.extreme_integer(f, None, 7.0, 143.2, 142.5, decreasing=True)) == 143.0
    # a margin that 143 fails (1000 / 143 = 6.993 > 7 (1 - 0.002)): 144
    assert float(roots.extreme_integer(f, None, 7.0, 150.0, 120.0, decreasing=True, margin=2e-3)) == 144.0


def test_gaussian_epsilon_is_the_feasible_end():
    d = jnp.array([1e-5, 1e-10, 0.3, 1e-15])
    mu = jnp.array([1.0, 3.0, 0.5, 2.0])
    e = np.asarray(tf.gaussian_epsilon(d, mu))
    for ei, di, mi in zip(e, np.asarray(d), np.asarray(mu)):
        assert float(cf.gaussian_delta(ei, mi)) <= di  # feasible: delta_G(eps) <= delta
        assert float(cf.gaussian_delta(ei * (1 - 1e-12), mi)) > di or ei == 0.0  # and tight to 1e-12
