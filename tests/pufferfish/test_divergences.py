"""renyi_divergence against scipy.integrate.quad (independent, plain numpy densities)."""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import logsumexp

import jaxdp.pufferfish as pf


def ref_renyi(x, wx, y, wy, alpha, noise, s):
    x, y = np.asarray(x, float), np.asarray(y, float)
    wx, wy = np.asarray(wx, float) / np.sum(wx), np.asarray(wy, float) / np.sum(wy)

    def logq(z, a, w):
        if noise == "laplace":
            return logsumexp(np.log(w) - np.abs(z - a) / s) - np.log(2 * s)
        return logsumexp(np.log(w) - (z - a) ** 2 / (2 * s * s)) - 0.5 * np.log(2 * np.pi * s * s)

    f = lambda z: np.exp(alpha * logq(z, x, wx) + (1 - alpha) * logq(z, y, wy))
    lo, hi = min(x.min(), y.min()), max(x.max(), y.max())
    if noise == "gaussian" and alpha > 1:
        lo = min(lo, alpha * x.min() - (alpha - 1) * y.max())
        hi = max(hi, alpha * x.max() - (alpha - 1) * y.min())
    pts = np.unique(np.concatenate([x, y, np.linspace(lo, hi, 50)]))
    tot = 0.0
    for a_, b_ in zip(pts[:-1], pts[1:]):
        tot += integrate.quad(f, a_, b_, epsabs=0, epsrel=1e-13, limit=200)[0]
    tot += integrate.quad(f, hi, np.inf, epsabs=0, epsrel=1e-13, limit=200)[0]
    tot += integrate.quad(f, -np.inf, lo, epsabs=0, epsrel=1e-13, limit=200)[0]
    return np.log(tot) / (alpha - 1)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("alpha", [0.5, 1.5, 3.0, 8.0])
def test_against_scipy_quad(noise, alpha):
    rng = np.random.default_rng(int(alpha * 10) + (noise == "laplace"))
    for _ in range(3):
        x, y = rng.normal(0, 1, 4), rng.normal(0.5, 1.5, 4)
        wx, wy = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
        s = rng.uniform(0.7, 3.0)
        want = ref_renyi(x, wx, y, wy, alpha, noise, s)
        got, up = pf.renyi_divergence(x, y, alpha=alpha, noise=noise, scale=s, weights_i=wx, weights_j=wy,
                                      return_upper=True)
        np.testing.assert_allclose(float(got), want, rtol=1e-8, atol=1e-12)
        assert float(up) >= want  # the upper value errs high


def test_closed_forms():
    # Laplace pair closed form (spec section 1) and alpha = inf: |x - x'| / b
    for a in [0.3, 0.5, 2.0, 7.0]:
        t = 1.7
        g = a / (2 * a - 1) * np.exp((a - 1) * t) + (a - 1) / (2 * a - 1) * np.exp(-a * t) if a != 0.5 else np.exp(-t / 2) * (1 + t / 2)
        np.testing.assert_allclose(float(pf.renyi_laplace_shift(t, 1.0, a)), np.log(g) / (a - 1), rtol=1e-12)
        np.testing.assert_allclose(float(pf.renyi_divergence([0.0], [t], alpha=a, noise="laplace", scale=1.0)),
                                   np.log(g) / (a - 1), rtol=1e-9)
    np.testing.assert_allclose(float(pf.renyi_divergence([0.0], [1.7], alpha=np.inf, noise="laplace", scale=1.0)), 1.7, rtol=1e-12)


def test_dinf_exact_laplace_mixture():
    # D_inf = sup_z log q_i/q_j; compare with a dense grid maximum (grid max <= true sup)
    x, y, wx, wy = np.array([0.0, 1.0, 3.0]), np.array([0.5, 2.0]), np.array([.2, .5, .3]), np.array([.6, .4])
    z = np.linspace(-30, 30, 600001)
    lq = lambda a, w: logsumexp(np.log(w)[None] - np.abs(z[:, None] - a[None]) / 1.3, axis=1)
    ref = np.max(lq(x, wx) - lq(y, wy))
    got = float(pf.renyi_divergence(x, y, alpha=np.inf, noise="laplace", scale=1.3, weights_i=wx, weights_j=wy))
    assert got >= ref - 1e-12 and got - ref < 1e-6
