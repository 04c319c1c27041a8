"""Tests of the Monte Carlo auditor (jaxdp.audit).

Provenance: at M = 1 the shuffled pair is exactly N(0,1) vs N(1/sigma,1), so f = G_{sqrt(E)/sigma}
(closed form, scipy); exact TV at sigma = 1, M = 100 is 0.051416 (spec section 6); Clopper-Pearson
quantiles from scipy.stats.beta.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.stats import beta, norm

from jaxdp.audit import (
    audit_shuffled_gaussian,
    audit_tradeoff,
    clopper_pearson,
    gaussian_loss_sampler,
    shuffled_gaussian_loss_sampler,
)

A = np.array([0.0, 0.01, 0.1, 0.3, 0.6, 0.9, 1.0])


def test_clopper_pearson_matches_scipy():
    lo, hi = clopper_pearson(jnp.array([0.0, 3.0, 50.0, 100.0]), 100, 0.005)
    assert_allclose(np.asarray(lo), [0.0, beta.ppf(0.005, 3, 98), beta.ppf(0.005, 50, 51), beta.ppf(0.005, 100, 1)], rtol=1e-10)
    assert_allclose(np.asarray(hi), [beta.ppf(0.995, 1, 100), beta.ppf(0.995, 4, 97), beta.ppf(0.995, 51, 50), 1.0], rtol=1e-10)


@pytest.mark.parametrize("E", [1, 3])
def test_shuffled_M1_covers_exact_curve(E):
    sigma = 1.0
    r = audit_shuffled_gaussian(jax.random.key(E), A, sigma, 1, num_epochs=E, num_samples=50_000)
    mu = np.sqrt(E) / sigma
    exact = norm.cdf(norm.ppf(1 - A) - mu)  # G_{sqrt(E)/sigma}
    lo, hi = np.asarray(r.lower), np.asarray(r.upper)
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= hi + 1e-12)
    # the interval is wide where f is steep (small a); DKW eps ~ 0.009 at n = 5e4
    assert np.all((hi - lo)[2:] < 0.06)
    tv = 2 * norm.cdf(mu / 2) - 1
    assert float(r.tv_lower) <= tv <= float(r.tv_upper)
    assert abs(float(r.mean_likelihood_ratio) - 1) < 0.05


def test_shuffled_M100_tv_matches_spec():
    # spec section 6: exact single-epoch TV at sigma = 1, M = 100 is 0.051416
    r = audit_shuffled_gaussian(jax.random.key(7), 0.1, 1.0, 100, num_samples=50_000)
    assert float(r.tv_lower) <= 0.051416 <= float(r.tv_upper)
    assert float(r.tv_upper) - float(r.tv_lower) < 0.005


def test_blocking_matches_direct_logsumexp():
    # rounds streamed in blocks of 4 (running log-sum-exp, last block masked) == direct formula
    k = jax.random.key(3)
    lp, lq = shuffled_gaussian_loss_sampler(0.8, 10, num_samples=50, block_size=4)(k)
    kp, kq = jax.random.split(k)
    for key, shift, got in ((kp, 0.0, lp), (kq, 1.0, lq)):
        kb = jax.random.fold_in(key, 0)
        x = jnp.concatenate([jax.random.normal(jax.random.fold_in(kb, j), (50, 4)) for j in range(3)], axis=1)[:, :10]
        x = x.at[:, 0].add(shift / 0.8)  # under Q round 0 carries the differing example
        direct = jax.scipy.special.logsumexp(x / 0.8, axis=1) - 0.5 / 0.64 - np.log(10)
        assert_allclose(np.asarray(got), np.asarray(direct), rtol=1e-12)


def test_generic_sampler_jit_vmap():
    s = gaussian_loss_sampler(1.0, num_samples=5_000)
    f = jax.jit(jax.vmap(lambda k: audit_tradeoff(k, s, jnp.asarray(A)).estimate))
    est = np.asarray(f(jax.random.split(jax.random.key(0), 3)))
    assert est.shape == (3, len(A))
    exact = norm.cdf(norm.ppf(1 - A) - 1.0)
    assert np.max(np.abs(est - exact)) < 0.05
    # traced sigma through the shuffled sampler
    g = jax.jit(lambda sig: audit_shuffled_gaussian(jax.random.key(0), 0.1, sig, 4, num_samples=2_000).estimate)
    assert 0 < float(g(2.0)) < 0.9


def test_bad_input():
    s = gaussian_loss_sampler(1.0, num_samples=100)
    with pytest.raises(ValueError, match="alpha"):
        audit_tradeoff(jax.random.key(0), s, 1.5)
    with pytest.raises(ValueError, match="confidence"):
        audit_tradeoff(jax.random.key(0), s, 0.1, confidence=1.0)
    with pytest.raises(ValueError, match="sigma"):
        shuffled_gaussian_loss_sampler(0.0, 10)
    with pytest.raises(ValueError, match="num_rounds"):
        shuffled_gaussian_loss_sampler(1.0, 0)
    with pytest.raises(TypeError, match="num_rounds"):
        shuffled_gaussian_loss_sampler(1.0, 10.5)
    # traced bad sigma: NaN losses, NaN audit
    g = jax.jit(lambda sig: audit_shuffled_gaussian(jax.random.key(0), 0.1, sig, 4, num_samples=100).tv_estimate)
    assert np.isnan(float(g(-1.0)))


@pytest.mark.slow
def test_coverage_over_repetitions():
    # 99% intervals: over 100 independent audits the exact value must be covered nearly always
    s = gaussian_loss_sampler(1.0, num_samples=2_000)
    f = jax.jit(jax.vmap(lambda k: audit_tradeoff(k, s, jnp.asarray([0.05, 0.3]))))
    r = f(jax.random.split(jax.random.key(11), 100))
    exact = norm.cdf(norm.ppf(1 - np.array([0.05, 0.3])) - 1.0)
    cov = np.mean((np.asarray(r.lower) <= exact) & (exact <= np.asarray(r.upper)), axis=0)
    assert np.all(cov >= 0.96)
