"""Tests of jaxdp.shuffle.closed_form against the spec's numbers and independent references.

Provenance: spec = /work/shared/spec/shuffle.md (van Dijk & Ertan 2026 reconstructions);
independent references computed in the test with scipy (quad / norm).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import integrate
from scipy.stats import norm

from jaxdp.shuffle import closed_form as cf


def _rho_quad(sigma):
    # E|Y - 1|^3 by numerical integration over Z (independent of the closed form).
    s = 1.0 / sigma
    f = lambda z: abs(np.exp(s * z - s * s / 2) - 1.0) ** 3 * norm.pdf(z)  # noqa: E731
    return integrate.quad(f, -12, s / 2, epsabs=0, epsrel=1e-12)[0] + integrate.quad(
        f, s / 2, 40, epsabs=0, epsrel=1e-12, limit=200
    )[0]


def test_rho_spec_value():
    # spec section 2: rho(1) = 14.302547
    assert_allclose(float(cf.rho(1.0)), 14.302547, rtol=1e-7)


@pytest.mark.parametrize("sigma", [0.6, 1.0, 1.7, 3.0, 10.0])
def test_rho_matches_quadrature(sigma):
    assert_allclose(float(cf.rho(sigma)), _rho_quad(sigma), rtol=1e-9)


# spec section 6, planning table (delta_BE with C = 0.56, delta = 0.01): sigma, v, rho, M
PLANNING = [
    (0.7, 6.6969, 435.57, 1.78e7),
    (1.0, 1.7183, 14.303, 1.138e6),
    (1.5, 0.55962, 1.2813, 2.64e5),
    (2.0, 0.28403, 0.35322, 1.54e5),
    (3.0, 0.11752, 0.076561, 1.02e5),
]


@pytest.mark.parametrize("sigma,v,rho,M", PLANNING)
def test_planning_table(sigma, v, rho, M):
    assert_allclose(float(cf.variance(sigma)), v, rtol=1e-4)
    assert_allclose(float(cf.rho(sigma)), rho, rtol=1e-4)
    # the table rounds M to 3 significant digits
    assert_allclose(float(cf.rounds_berry_esseen(0.01, sigma)), M, rtol=6e-3)


def test_regression_targets():
    # spec section 2 [P]: sigma = 1, delta = 0.01, E = 1 -> M = 1.138e6 (1%), N = 1.14e7 (batch 10)
    M = float(cf.rounds_berry_esseen(0.01, 1.0))
    assert_allclose(M, 1.138e6, rtol=1e-2)
    assert_allclose(float(cf.samples(M, 10)), 1.14e7, rtol=1e-2)
    # spec section 3 [P]: E = 100, total delta 0.01 -> per-epoch 1.005e-4, M = 1.127e10 (2%)
    assert_allclose(float(cf.rounds_berry_esseen(0.01, 1.0, 100)), 1.127e10, rtol=2e-2)
    # consistency: the planned M gives back the per-epoch delta, and composing E times gives 0.01
    d1 = float(cf.delta_berry_esseen(1.0, cf.rounds_berry_esseen(0.01, 1.0, 100)))
    assert_allclose(d1, 1.005e-4, rtol=1e-3)
    assert_allclose(float(cf.compose_delta(d1, 100)), 0.01, rtol=1e-10)


def test_delta_b_formula():
    # delta_B = 2 * 0.7975 * rho / (v^1.5 sqrt M) + sqrt(v / (2 pi M)) (spec section 2)
    s, M = 1.0, 1e6
    v, r = np.e - 1.0, 14.302547010955664
    assert_allclose(
        float(cf.delta_b(s, M)), 2 * 0.7975 * r / (v**1.5 * 1e3) + np.sqrt(v / (2 * np.pi * M)), rtol=1e-9
    )
    # nearly fits: within 15% of delta_BE at the spec's target
    assert abs(float(cf.delta_b(s, 1.138e6)) / 0.01 - 1) < 0.15


def test_regime_thresholds():
    M = np.array([10.0, 1e3, 1e6])
    lnM = np.log(M)
    assert_allclose(np.asarray(cf.regime_threshold(M)), np.sqrt(3 / lnM))
    assert_allclose(np.asarray(cf.impossibility_threshold(M)), 1 / np.sqrt(2 * lnM))
    assert_allclose(np.asarray(cf.impossibility_gap(M)), 0.5 * (1 - 1 / np.sqrt(4 * np.pi * lnM)))
    # regime condition sigma >= sqrt(3/ln M) <=> e^{3/sigma^2} <= M
    assert cf.regime(1.0, np.exp(3.0) * 1.0001).name == "berry_esseen"
    assert cf.regime(1.0, np.exp(3.0) * 0.999).name == "gap"
    assert cf.regime(0.1, 1e6).name == "impossible"
    r = cf.regime(jnp.array([0.1, 0.3, 1.0]), 1e6)
    assert list(r.name) == ["impossible", "gap", "berry_esseen"]
    assert_allclose(float(cf.regime(0.1, 1e6).tv_lower_bound), float(cf.impossibility_gap(1e6)))
    # usable under jit
    codes = jax.jit(lambda s: cf.regime(s, 1e6).code)(jnp.array([0.1, 0.3, 1.0]))
    assert codes.tolist() == [2, 1, 0]


def test_M_equals_one():
    # M = 1: the pair is exactly N(0,1) vs N(1/sigma,1); no sigma is in the BE regime.
    assert float(cf.regime_threshold(1.0)) == np.inf
    assert float(cf.impossibility_gap(1.0)) == 0.0
    assert cf.regime(0.01, 1.0).name == "gap"
    assert np.isnan(float(cf.tradeoff_berry_esseen(0.1, 5.0, 1.0)))
    a = np.linspace(0, 1, 11)
    # linear test is the optimal test at M = 1: exactly G_{sqrt(E)/sigma}
    assert_allclose(np.asarray(cf.tradeoff_linear_test(a, 2.0, 1.0, 3)), norm.cdf(norm.ppf(1 - a) - np.sqrt(3) / 2))
    assert_allclose(float(cf.delta_linear_test(2.0, 1.0)), 2 * norm.cdf(0.25) - 1)


def test_tradeoff_bounds_sandwich():
    a = np.linspace(0, 1, 101)
    for sigma, M, E in [(1.0, 1e4, 1), (2.0, 1e3, 5), (1.0, 1.2e6, 1)]:
        lo = np.asarray(cf.tradeoff_berry_esseen(a, sigma, M, E))
        hi = np.asarray(cf.tradeoff_linear_test(a, sigma, M, E))
        assert np.all(lo <= hi + 1e-15)
        assert np.all(np.diff(lo) <= 0) and np.all(lo >= 0) and np.all(lo <= 1 - a + 1e-15)
    # f >= 1 - a - delta: at the planning point the lower bound is (1 - 0.01) - a
    M = float(cf.rounds_berry_esseen(0.01, 1.0))
    assert_allclose(float(cf.tradeoff_berry_esseen(0.2, 1.0, M)), 0.99 - 0.2, rtol=1e-9)
    # outside the regime: NaN, no bound claimed
    assert np.isnan(float(cf.tradeoff_berry_esseen(0.1, 1.0, 10.0)))


def test_linear_gap_below_exact_tv():
    # spec section 6: exact TV at sigma = 1, M = 100 is 0.051416; M = 10^4: 0.005228.
    assert float(cf.delta_linear_test(1.0, 100.0)) <= 0.051416
    assert float(cf.delta_linear_test(1.0, 1e4)) <= 0.005228
    # and the Berry-Esseen delta upper-bounds it (sigma = 1, M = 1e4 is in the regime)
    assert float(cf.delta_berry_esseen(1.0, 1e4)) >= 0.005228


def test_jit_vmap_equal_eager():
    args = (0.3, 1.5, 2e5, 3.0)
    eager = cf.tradeoff_berry_esseen(*args)
    assert_allclose(float(jax.jit(cf.tradeoff_berry_esseen)(*args)), float(eager), rtol=1e-14)
    sig = jnp.array([1.0, 1.5, 2.0])
    v = jax.vmap(lambda s: cf.rounds_berry_esseen(0.01, s))(sig)
    assert_allclose(np.asarray(v), [float(cf.rounds_berry_esseen(0.01, s)) for s in [1.0, 1.5, 2.0]], rtol=1e-14)


def _fd(f, x, rel=1e-6):
    h = rel * abs(x)
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize(
    "fn,x0",
    [
        (lambda s: cf.rho(s), 1.3),
        (lambda s: cf.delta_berry_esseen(s, 1e5), 1.3),
        (lambda m: cf.delta_berry_esseen(1.3, m), 1e5),
        (lambda s: cf.delta_b(s, 1e5), 1.3),
        (lambda s: cf.rounds_berry_esseen(0.01, s, 10), 1.3),
        (lambda s: cf.tradeoff_berry_esseen(0.2, s, 1e5, 4), 1.3),
        (lambda m: cf.tradeoff_berry_esseen(0.2, 1.3, m, 4), 1e5),
        (lambda s: cf.tradeoff_linear_test(0.2, s, 50.0, 4), 1.3),
        (lambda m: cf.tradeoff_linear_test(0.2, 1.3, m, 4), 50.0),
        (lambda m: cf.delta_linear_test(1.3, m), 50.0),
    ],
)
def test_gradients_match_finite_differences(fn, x0):
    g = float(jax.grad(fn)(x0))
    fd = float(_fd(lambda x: float(fn(x)), x0))
    assert_allclose(g, fd, rtol=1e-4)


def test_bad_input():
    with pytest.raises(ValueError, match="sigma"):
        cf.rho(0.0)
    with pytest.raises(ValueError, match="M"):
        cf.delta_berry_esseen(1.0, 0.5)
    with pytest.raises(ValueError, match="a must be in"):
        cf.tradeoff_linear_test(1.5, 1.0, 10.0)
    with pytest.raises(ValueError, match="delta"):
        cf.rounds_berry_esseen(1.0, 1.0)
    with pytest.raises(ValueError, match="E"):
        cf.tradeoff_berry_esseen(0.1, 1.0, 1e6, 0)
    with pytest.raises(ValueError, match="C"):
        cf.delta_berry_esseen(1.0, 1e6, C=-1.0)
    # traced bad input: NaN, never a number
    assert np.isnan(float(jax.jit(cf.delta_berry_esseen)(-1.0, 1e6)))
    assert np.isnan(float(jax.jit(cf.rounds_berry_esseen)(0.0, 1.0)))
    assert int(jax.jit(lambda s: cf.regime(s, 10.0).code)(-1.0)) == -1
