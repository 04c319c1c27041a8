"""The Laplace and Poisson-subsampling laws, checked at the mechanism level (no discretisation).

References: dp_accounting 0.6.0's continuous ``LaplacePrivacyLoss(...).get_delta_for_epsilon``
(the exact hockey-stick divergence of its dominating pair, both adjacency types, with
subsampling); scipy's Laplace distribution for the survival functions; jaxdp's closed-form
``SubsampledGaussian`` (an independent implementation) for the generic combinator; the
amplification identity delta' = q delta at eps' = log(1 + q(e^eps - 1)) for (eps, delta) pairs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxdp.mechanisms import EpsilonDelta, Gaussian, Laplace, PoissonSubsampled, SubsampledGaussian, SubsampledLaplace


def _delta(m, eps, direction):
    # hockey stick from the law: delta(eps) = A(L > eps) - e^eps B(L > eps) (atoms at L = eps add 0)
    sa, sb = m.privacy_loss_sf(jnp.asarray(eps), direction)
    return np.asarray(sa - jnp.exp(eps) * sb)


@pytest.mark.parametrize("b", [0.3, 1.0, 4.0])
def test_laplace_sf_against_scipy(b):
    # remove: A = Lap(1, b), B = Lap(0, b); L(y) = (|y| - |y - 1|)/b > x  <=>  y > (b x + 1)/2 inside
    m = Laplace(b)
    e = 1.0 / b
    x = np.linspace(-e * 0.999, e * 0.999, 41)
    sa, sb = m.privacy_loss_sf(x, "remove")
    y = (b * x + 1.0) / 2.0
    np.testing.assert_allclose(sa, stats.laplace(loc=1.0, scale=b).sf(y), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(sb, stats.laplace(loc=0.0, scale=b).sf(y), rtol=1e-13, atol=1e-15)
    # atoms: A-mass 1/2 at +eps and e^{-eps}/2 at -eps; nothing beyond
    sa2, sb2 = m.privacy_loss_sf(np.array([-np.inf, -e - 1e-9, e, np.inf]), "add")
    np.testing.assert_allclose(sa2, [1.0, 1.0, 0.0, 0.0])
    np.testing.assert_allclose(sb2, [1.0, 1.0, 0.0, 0.0])


@pytest.mark.parametrize("q", [1.0, 0.3, 0.01])
@pytest.mark.parametrize("b", [0.5, 2.0])
def test_laplace_delta_against_dp_accounting(q, b):
    from dp_accounting.pld import privacy_loss_mechanism as plm

    m = SubsampledLaplace(b, q) if q < 1 else Laplace(b)
    for direction, adj in (("remove", plm.AdjacencyType.REMOVE), ("add", plm.AdjacencyType.ADD)):
        ref = plm.LaplacePrivacyLoss(b, sampling_prob=q, adjacency_type=adj)
        for eps in (0.0, 0.05, 0.3, 0.9 / b):
            got = float(_delta(m, eps, direction))
            want = ref.get_delta_for_epsilon(eps)
            assert got == pytest.approx(want, rel=1e-10, abs=1e-15), (direction, eps)


@pytest.mark.parametrize("q", [0.5, 0.02, 1.0])
def test_generic_subsampling_equals_closed_form_gaussian(q):
    s = 0.9
    gen = PoissonSubsampled(Gaussian(s), q)
    ref = SubsampledGaussian(noise_multiplier=s, sampling_probability=q)
    for direction in ("remove", "add"):
        lo, hi = ref.privacy_loss_range(direction, 1e-12)
        x = jnp.concatenate([jnp.linspace(float(lo), float(hi), 61), jnp.array([-jnp.inf, jnp.inf])])
        for got, want in zip(gen.privacy_loss_sf(x, direction), ref.privacy_loss_sf(x, direction)):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(gen.privacy_loss_range(direction, 1e-12), (lo, hi), rtol=1e-12)


@pytest.mark.parametrize("q", [0.1, 0.6])
def test_generic_subsampling_of_epsilon_delta(q):
    eps, d = 1.3, 1e-3
    m = PoissonSubsampled(EpsilonDelta(eps, d), q)
    eps_q = float(np.log1p(q * np.expm1(eps)))
    # remove: exactly q delta (qA + (1-q)B - e^{eps'} B = q (A - e^eps B)); add: at most q delta
    assert float(_delta(m, eps_q, "remove")) == pytest.approx(q * d, rel=1e-10)
    assert float(_delta(m, eps_q, "add")) <= q * d * (1 + 1e-10)
    # the +inf atom: q delta under remove, none under add (L'_add <= -log(1 - q))
    assert float(m.privacy_loss_sf(jnp.inf, "remove")[0]) == pytest.approx(q * d, rel=1e-12)
    assert float(m.privacy_loss_sf(jnp.inf, "add")[0]) == 0.0
    # every A-law has total mass 1
    for direction in ("remove", "add"):
        assert float(m.privacy_loss_sf(-jnp.inf, direction)[0]) == pytest.approx(1.0, abs=1e-15)


def test_laplace_gradients_finite():
    def f(b, q):
        sa, sb = SubsampledLaplace(b, q).privacy_loss_sf(jnp.array([-jnp.inf, -0.1, 0.05, 0.2, jnp.inf]), "add")
        return jnp.sum(sa) + jnp.sum(sb)

    g = jax.grad(f, argnums=(0, 1))(1.5, 0.2)
    assert all(np.isfinite(np.asarray(x)) for x in g)
