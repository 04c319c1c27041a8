"""Spec section 5 test vectors (docs: /work/shared/spec/pufferfish.md, independent computation)."""

import numpy as np
import pytest
from scipy.stats import binom

import jaxdp.pufferfish as pf

REL = 1e-4

X = np.arange(21.0)
WI = binom.pmf(X, 20, 0.5)
WJ = binom.pmf(X, 20, 0.6)

# (alpha, eps, b_Song, b_Pierquin, b_Thm1, b_tight, sigma2_Pierquin, sigma2_Thm2)  -- spec table
BINOM = [
    (2, 0.5, 6, 3.4511, 8.0238, 2.3157, 18, 8.2064),
    (2, 1, 3, 2.1460, 4.0240, 1.4435, 9, 4.1748),
    (5, 1, 3, 2.6157, 2.5738, 1.8064, 22.5, 12.526),
    (10, 1, 3, 2.8003, 2.4551, 2.0844, 45, 31.874),
]


def _lap(method, a, e, x=X, y=X, wi=WI, wj=WJ):
    return float(pf.calibrate_laplace(x, y, alpha=a, epsilon=e, method=method, weights_i=wi, weights_j=wj))


def _gau(method, a, e, x=X, y=X, wi=WI, wj=WJ):
    return float(pf.calibrate_gaussian(x, y, alpha=a, epsilon=e, method=method, weights_i=wi, weights_j=wj))


def test_binomial_wasserstein():
    # spec: W_1 = 2, W_2 = 2.01184, W_inf = 3
    w = pf.wasserstein_distances(X, X, weights_i=WI, weights_j=WJ)
    np.testing.assert_allclose([w["w1"], w["w2"], w["winf"]], [2, 2.01184, 3], rtol=1e-5)


@pytest.mark.parametrize("row", BINOM)
def test_binomial_table(row):
    a, e, song, pier, t1, tight, s2p, s2t2 = row
    # the spec rounds to 4-5 significant digits; compare at the digits given
    got = [_lap("song", a, e), _lap("pierquin", a, e), _lap("theorem1", a, e), _lap("tight", a, e),
           _gau("pierquin", a, e) ** 2, _gau("theorem2", a, e) ** 2]
    want = [song, pier, t1, tight, s2p, s2t2]
    for g, w in zip(got, want):
        digits = len(str(w).replace(".", "").lstrip("0"))
        assert abs(g - w) <= max(REL * abs(w), 0.5 * 10.0 ** (np.floor(np.log10(abs(w))) - digits + 1) * 1.0001), (g, w)


@pytest.mark.parametrize("a,e,t1,tight,s2", [(2, 1, 2.0, 0.715333, 1.0), (5, 0.5, 2.5, 1.547144, 5.0)])
def test_deterministic(a, e, t1, tight, s2):
    # spec section 5 (deterministic |x - x'| = 1); Song b = 1/eps; Pierquin = tight here
    x, y = [0.0], [1.0]
    np.testing.assert_allclose(_lap("theorem1", a, e, x, y, None, None), t1, rtol=REL)
    np.testing.assert_allclose(_lap("tight", a, e, x, y, None, None), tight, rtol=REL)
    np.testing.assert_allclose(_lap("pierquin", a, e, x, y, None, None), tight, rtol=REL)
    np.testing.assert_allclose(_lap("exact", a, e, x, y, None, None), tight, rtol=REL)
    np.testing.assert_allclose(_lap("song", a, e, x, y, None, None), 1.0 / e, rtol=1e-12)
    for m in ["theorem2", "pierquin", "exact"]:
        np.testing.assert_allclose(_gau(m, a, e, x, y, None, None) ** 2, s2, rtol=REL)


def test_deterministic_closed_forms_many():
    # closed forms: Thm1 b = alpha Delta / ((alpha-1) eps); Gaussian sigma^2 = alpha Delta^2 / (2 eps)
    # (RDP Gaussian); tight = Mironov's Laplace RDP: log g_alpha(Delta/b) = (alpha-1) eps.
    from scipy.optimize import brentq
    for a in [1.5, 3.0, 7.0, 20.0]:
        for e in [0.1, 1.0, 3.0]:
            for delta in [0.3, 2.0]:
                x, y = [1.0], [1.0 + delta]
                np.testing.assert_allclose(_lap("theorem1", a, e, x, y, None, None), a * delta / ((a - 1) * e), rtol=1e-9)
                np.testing.assert_allclose(_gau("theorem2", a, e, x, y, None, None) ** 2, a * delta**2 / (2 * e), rtol=1e-9)
                g = lambda b: np.log(a / (2 * a - 1) * np.exp((a - 1) * delta / b) + (a - 1) / (2 * a - 1) * np.exp(-a * delta / b)) - (a - 1) * e
                np.testing.assert_allclose(_lap("tight", a, e, x, y, None, None), brentq(g, 1e-3, 1e4, xtol=1e-14), rtol=1e-9)


def test_alpha_inf_is_song():
    # spec: alpha -> inf recovers Song's b = W_inf / eps
    for m in ["theorem1", "tight", "pierquin", "song"]:
        np.testing.assert_allclose(_lap(m, np.inf, 0.5), 6.0, rtol=1e-12)
    # and the limit: large finite alpha approaches W_inf / eps from above (theorem1) / below (tight)
    assert abs(_lap("theorem1", 1e6, 0.5) / 6.0 - 1) < 1e-3
    assert abs(_lap("tight", 1e6, 0.5) / 6.0 - 1) < 1e-3
    # Gaussian: no finite sigma at alpha = inf
    assert np.isinf(_gau("theorem2", np.inf, 1.0))


# Gaussian priors: (mi, si, mj, sj) -> {(alpha, eps): (exact, thm2, pierquin)}  -- spec table
GP = [
    ((0, 1, 1, 1), [(2, 1, 0, 1, 1), (5, 1, 1.5, 2.5, 2.5), (10, 0.5, 9, 10, 10)]),
    ((0, 1, 1, 1.2), [(2, 1, 0.4879, 1.1185, np.inf), (5, 1, 3.3034, 3.3871, np.inf), (10, 0.5, 13.020, 13.943, np.inf)]),
    ((0, 1, 0, 1.5), [(2, 1, 0.3443, 0.5783, np.inf), (5, 1, 4.0007, 5.0017, np.inf), (10, 0.5, 10.251, 22.503, np.inf)]),
]


@pytest.mark.parametrize("prior,rows", GP)
def test_gaussian_priors(prior, rows):
    mi, si, mj, sj = prior
    for a, e, ex, t2, pq in rows:
        got = [float(pf.calibrate_gaussian_prior(mi, si, mj, sj, alpha=a, epsilon=e, method=m)) ** 2
               for m in ["exact", "theorem2", "pierquin"]]
        for g, w in zip(got, [ex, t2, pq]):
            if np.isinf(w):
                assert np.isinf(g)
            elif w == 0:
                assert g == 0
            else:
                # spec values have 5 significant digits
                assert abs(g - w) <= max(REL * w, 0.5e-4 * 10 ** np.floor(np.log10(w)) * 1.0001), (g, w)
        # the exact sigma really gives D_alpha = eps in the worse direction (closed form)
        s = np.sqrt(got[0])
        if s > 0:
            d = max(float(pf.renyi_gaussian_priors(mi, si, mj, sj, s, a)), float(pf.renyi_gaussian_priors(mj, sj, mi, si, s, a)))
            np.testing.assert_allclose(d, e, rtol=1e-9)


def test_array_alpha_epsilon_broadcast():
    # arrays of alpha / epsilon are one vmapped call; values = the spec's deterministic vectors
    b = pf.calibrate_laplace([0.0], [1.0], alpha=np.array([2.0, 5.0]), epsilon=np.array([1.0, 0.5]), method="tight")
    np.testing.assert_allclose(np.asarray(b), [0.715333, 1.547144], rtol=REL)
    s = pf.calibrate_gaussian([0.0], [1.0], alpha=np.array([2.0, 5.0]), epsilon=np.array([1.0, 0.5]))
    np.testing.assert_allclose(np.asarray(s) ** 2, [1.0, 5.0], rtol=1e-9)
    s = pf.calibrate_gaussian_prior(0, 1, 1, 1.2, alpha=np.array([2.0, 5.0]), epsilon=1.0)
    np.testing.assert_allclose(np.asarray(s) ** 2, [0.4879, 3.3034], rtol=REL)
