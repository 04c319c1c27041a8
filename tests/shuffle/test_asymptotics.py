"""Tests of jaxdp.shuffle.asymptotics (CLT, Edgeworth, Poisson CLT comparison).

Provenance: spec = /work/shared/spec/shuffle.md; the "exact" reference law of U is computed here
independently: lognormal discretised on a lattice (bin masses from scipy's normal cdf) and
convolved M times by numpy FFT (sigma = 2, where the lognormal tail is short).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.stats import lognorm, norm

from jaxdp.shuffle import asymptotics as A
from jaxdp.shuffle import closed_form as cf


def _lattice_law(sigma, M, h=2e-3, zmax=9.0):
    """Law of L = (1/M) sum_j Y_j under P on a lattice of step h/M: (values, probabilities)."""
    s = 1.0 / sigma
    n = int(np.ceil(np.exp(s * zmax - s * s / 2) / h)) + 2
    edges = (np.arange(n + 1) - 0.5) * h
    edges[0] = 0.0
    z = (np.log(np.maximum(edges, 1e-300)) + s * s / 2) / s
    cdf = norm.cdf(z)
    cdf[0], cdf[-1] = 0.0, 1.0
    pm = np.diff(cdf)
    N = 1 << int(np.ceil(np.log2(n * M + 1)))
    ps = np.maximum(np.fft.irfft(np.fft.rfft(pm, N) ** M, N), 0.0)
    ps /= ps.sum()
    return np.arange(N) * h / M, ps


def _lattice_curve(L, p, a):
    a_t = 1.0 - np.cumsum(p)  # P(L > t)
    f_t = np.cumsum(p * L)  # Q(L <= t) = E_P[L 1{L <= t}]
    return np.interp(a, a_t[::-1], f_t[::-1])


def _lattice_tv2(L, p):
    # E = 2: TV = E_P[(1 - L1 L2)_+] = sum_i p_i [C(1/L_i) - L_i D(1/L_i)],
    # C(x) = sum_{L_j < x} p_j, D(x) = sum_{L_j < x} p_j L_j.
    C = np.concatenate([[0.0], np.cumsum(p)])
    D = np.concatenate([[0.0], np.cumsum(p * L)])
    with np.errstate(divide="ignore"):
        k = np.searchsorted(L, 1.0 / L, side="left")
    return float(np.sum(p * (C[k] - L * D[k])))


A_GRID = np.array([0.01, 0.05, 0.2, 0.5, 0.8])


@pytest.fixture(scope="module")
def exact_sigma2():
    return {M: _lattice_law(2.0, M) for M in (10, 30, 100)}


def test_mu_clt_and_tradeoff_clt():
    # mu_E = sqrt(E (e^{1/sigma^2} - 1) / M) (spec section 4)
    assert_allclose(float(A.mu_clt(1.0, 100.0, 4)), np.sqrt(4 * (np.e - 1) / 100))
    a = np.linspace(0, 1, 11)
    mu = np.sqrt(4 * (np.e - 1) / 100)
    assert_allclose(np.asarray(A.tradeoff_clt(a, 1.0, 100.0, 4)), norm.cdf(norm.ppf(1 - a) - mu), atol=1e-15)
    assert_allclose(float(A.delta_gap_clt(1.0, 100.0, 4)), 2 * norm.cdf(mu / 2) - 1)


def test_clt_ratio_spec_values():
    # spec section 5 [R]: 1.3046 at sigma = 1, 1.1775 at sigma = 2, sqrt 2 as sigma -> 0, 1 as -> inf
    assert_allclose(float(A.clt_ratio(1.0)), 1.3046, atol=5e-5)
    assert_allclose(float(A.clt_ratio(2.0)), 1.1775, atol=5e-5)
    assert_allclose(float(A.clt_ratio(0.02)), np.sqrt(2), rtol=1e-12)
    assert_allclose(float(A.clt_ratio(1e3)), 1.0, atol=1e-3)
    assert float(A.clt_ratio(1e3)) > 1.0


def test_poisson_mus():
    sigma, M, E = 1.5, 400.0, 7.0
    p, T = 1.0 / M, E * M
    # identity: Bu et al.'s mu_P with p = 1/M, T = E M equals the shuffling CLT mu_E
    assert_allclose(float(A.mu_poisson_bu(sigma, p, T)), float(A.mu_clt(sigma, M, E)), rtol=1e-14)
    assert_allclose(
        float(A.mu_poisson_drs(sigma, p, T)) / float(A.mu_poisson_bu(sigma, p, T)), float(A.clt_ratio(sigma)), rtol=1e-12
    )
    s = 1 / sigma
    drs = np.sqrt(2) * p * np.sqrt(T) * np.sqrt(np.exp(s * s) * norm.cdf(1.5 * s) + 3 * norm.cdf(-0.5 * s) - 2)
    assert_allclose(float(A.mu_poisson_drs(sigma, p, T)), drs, rtol=1e-12)


@pytest.mark.parametrize("sigma", [0.8, 1.0, 2.0])
def test_lognormal_cumulants_match_scipy(sigma):
    w, k3, k4 = (float(c) for c in A.lognormal_cumulants(sigma))
    # scipy lognormal with shape 1/sigma, scaled so that E Y = 1
    d = lognorm(1.0 / sigma, scale=np.exp(-0.5 / sigma**2))
    m, v, sk, ku = d.stats(moments="mvsk")
    assert_allclose(m, 1.0, rtol=1e-12)
    assert_allclose(w, v, rtol=1e-10)
    assert_allclose(k3 / w**1.5, sk, rtol=1e-10)
    assert_allclose(k4 / w**2, ku, rtol=1e-10)


def test_loss_cumulants_leading_terms():
    # log L ~ N(-v/(2M), v/M) under P and N(+v/(2M), v/M) under Q, corrections O(M^-2)
    sigma, M = 1.0, 1e4
    v = np.e - 1
    cp, cq = (np.asarray(c) for c in A.loss_cumulants(sigma, M))
    assert_allclose(cp[0], -v / (2 * M), rtol=5e-3)
    assert_allclose(cq[0], v / (2 * M), rtol=5e-3)
    assert_allclose(cp[1], v / M, rtol=5e-3)
    assert_allclose(cq[1], v / M, rtol=5e-3)
    # KL(P||Q) = -E_P log L > 0, KL(Q||P) = E_Q log L > 0, and KL(Q||P) <= log(1 + chi^2) = D_2
    assert cp[0] < 0 < cq[0] <= np.log1p(v / M)


def test_edgeworth_law_totals():
    # the Edgeworth signed law has total mass 1 and mean 0 (so Q(U <= inf) = 1)
    for order in (1, 2):
        assert_allclose(float(A.edgeworth_cdf(jnp.inf, 1.0, 50.0, order=order)), 1.0)
        assert_allclose(float(A.edgeworth_partial_expectation(40.0, 1.0, 50.0, order=order)), 1.0, atol=1e-12)
        assert_allclose(float(A.edgeworth_cdf(-40.0, 1.0, 50.0, order=order)), 0.0, atol=1e-12)


def test_delta_gap_edgeworth_spec_oracles():
    # spec section 6: exact TV at sigma = 1: M = 100 -> 0.051416, M = 10^4 -> 0.005228
    assert abs(float(A.delta_gap_edgeworth(1.0, 1e4, order=2)) - 0.005228) < 1e-6
    assert abs(float(A.delta_gap_edgeworth(1.0, 100.0, order=2)) - 0.051416) < 1e-3
    # Monte Carlo table (spec): M = 1000 -> 0.01644 +- 0.00006
    assert abs(float(A.delta_gap_edgeworth(1.0, 1e3, order=2)) - 0.01644) < 3 * 0.00006
    # closed form of order 2: sqrt(v/(2 pi M)) [1 + (g^2 - k)/(24 M)]
    q = np.e
    g2, k = (q + 2) ** 2 * (q - 1), q**4 + 2 * q**3 + 3 * q**2 - 6
    assert_allclose(
        float(A.delta_gap_edgeworth(1.0, 100.0)), np.sqrt((q - 1) / (200 * np.pi)) * (1 + (g2 - k) / 2400), rtol=1e-12
    )


def test_edgeworth_error_vs_exact_law(exact_sigma2):
    errs = {1: [], 2: [], "clt": [], "tv1": [], "tv2": []}
    for M, (L, p) in exact_sigma2.items():
        ex = _lattice_curve(L, p, A_GRID)
        tv = float(np.sum(p * np.maximum(1 - L, 0)))
        errs[1].append(np.max(np.abs(np.asarray(A.tradeoff_edgeworth(A_GRID, 2.0, M, order=1)) - ex)))
        errs[2].append(np.max(np.abs(np.asarray(A.tradeoff_edgeworth(A_GRID, 2.0, M, order=2)) - ex)))
        errs["clt"].append(np.max(np.abs(np.asarray(A.tradeoff_clt(A_GRID, 2.0, M)) - ex)))
        errs["tv1"].append(abs(float(A.delta_gap_edgeworth(2.0, M, order=1)) - tv))
        errs["tv2"].append(abs(float(A.delta_gap_edgeworth(2.0, M, order=2)) - tv))
    e1, e2, ec = (np.array(errs[k]) for k in (1, 2, "clt"))
    # measured (M = 10, 30, 100): order 2 ~ 2e-4, 2e-5, 2e-6; order 1, CLT ~ 7e-4 .. 4e-5
    assert np.all(e2 < e1) and np.all(e2 < ec)
    assert np.all(np.diff(e2) < 0) and np.all(np.diff(e1) < 0)
    assert e2[-1] < 5e-6
    # two-term TV error is O(M^{-5/2}) in absolute terms; one-term O(M^{-3/2})
    t1, t2 = np.array(errs["tv1"]), np.array(errs["tv2"])
    assert np.all(t2 < t1) and t2[-1] < 2e-6 and t1[-1] < 5e-5


def test_edgeworth_two_epochs_vs_exact(exact_sigma2):
    # E = 2: exact TV from the exact one-epoch law (double sum, see _lattice_tv2)
    for M in (30, 100):
        L, p = exact_sigma2[M]
        tv2 = _lattice_tv2(L, p)
        ew = float(A.delta_gap_edgeworth(2.0, M, 2))
        clt = float(A.delta_gap_clt(2.0, M, 2))
        assert abs(ew - tv2) < abs(clt - tv2)
        assert abs(ew - tv2) < 1e-4 * (100 / M) ** 1.5


def test_edgeworth_converges_to_clt():
    a = np.linspace(0.0, 1.0, 201)
    d = []
    for M in (1e2, 1e3, 1e4, 1e5):
        for E in (1, 3):
            ew = np.asarray(A.tradeoff_edgeworth(a, 1.0, M, E))
            d.append(np.max(np.abs(ew - np.asarray(A.tradeoff_clt(a, 1.0, M, E)))))
    d = np.array(d).reshape(4, 2)
    assert np.all(np.diff(d, axis=0) < 0)
    # the one-term correction is O(1/sqrt(M)) relative to the O(1/sqrt(M)) gap: difference O(1/M)
    assert np.all(d[-1] < 2e-4)


def test_tradeoff_edgeworth_is_valid_tradeoff():
    a = np.linspace(0.0, 1.0, 401)
    for sigma, M, E, order in [(0.7, 5.0, 1, 1), (1.0, 10.0, 4, 2), (1.0, 2.0, 1, 2), (1.0, 1.0, 1, 1)]:
        f = np.asarray(A.tradeoff_edgeworth(a, sigma, M, E, order=order))
        assert np.all(f >= 0) and np.all(f <= 1 - a + 1e-15)
        assert np.all(np.diff(f) <= 1e-15)


def test_jit_vmap():
    f = jax.jit(A.tradeoff_edgeworth, static_argnames=("order", "num_points"))
    assert_allclose(float(f(0.1, 1.0, 100.0, 3)), float(A.tradeoff_edgeworth(0.1, 1.0, 100.0, 3)), rtol=1e-14)
    v = jax.vmap(lambda s: A.tradeoff_edgeworth(0.1, s, 100.0))(jnp.array([1.0, 2.0]))
    assert_allclose(np.asarray(v), np.asarray(A.tradeoff_edgeworth(0.1, jnp.array([1.0, 2.0]), 100.0)), rtol=1e-14)


def _fd(f, x, rel=1e-6):
    h = rel * abs(x)
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.acceptance  # README suite budget (issue 18): gradients against finite differences: forward, reverse and batched programs, 10-20 s of XLA
@pytest.mark.parametrize(
    "fn,x0",
    [
        (lambda s: A.mu_clt(s, 100.0, 3), 1.2),
        (lambda m: A.tradeoff_clt(0.1, 1.2, m, 3), 100.0),
        (lambda s: A.delta_gap_edgeworth(s, 100.0), 1.2),
        (lambda m: A.delta_gap_edgeworth(1.2, m, 3), 100.0),
        (lambda s: A.tradeoff_edgeworth(0.1, s, 100.0), 1.2),
        (lambda m: A.tradeoff_edgeworth(0.1, 1.2, m, 3), 100.0),
        (lambda s: A.clt_ratio(s), 1.2),
        (lambda s: A.mu_poisson_drs(s, 0.01, 1000.0), 1.2),
    ],
)
def test_gradients_match_finite_differences(fn, x0):
    g = float(jax.grad(fn)(x0))
    fd = float(_fd(lambda x: float(fn(x)), x0))
    assert_allclose(g, fd, rtol=1e-4)


def test_bad_input():
    with pytest.raises(ValueError, match="sigma"):
        A.mu_clt(-1.0, 10.0)
    with pytest.raises(ValueError, match="M"):
        A.tradeoff_edgeworth(0.1, 1.0, 0.0)
    with pytest.raises(ValueError, match="order"):
        A.tradeoff_edgeworth(0.1, 1.0, 10.0, order=3)
    with pytest.raises(ValueError, match="p"):
        A.mu_poisson_bu(1.0, 1.5, 10.0)
    with pytest.raises(ValueError, match="a must be in"):
        A.tradeoff_clt(-0.1, 1.0, 10.0)
    assert np.isnan(float(jax.jit(A.delta_gap_edgeworth)(1.0, -3.0)))
    assert np.isnan(float(jax.jit(A.tradeoff_edgeworth)(2.0, 1.0, 10.0)))
    assert not np.isfinite(cf.rho(jnp.array(1.0)) * np.nan)  # sanity of the NaN convention
