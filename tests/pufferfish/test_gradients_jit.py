"""Gradients (implicit-function theorem) vs central finite differences; jit == eager; vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdp.pufferfish as pf
from jaxdp.pufferfish.calibration import calibrate_all

X = jnp.asarray([0.0, 1.0, 2.5, 4.0])
WX = jnp.asarray([0.1, 0.4, 0.3, 0.2])
Y = jnp.asarray([0.5, 3.0, 3.5, 3.5])
WY = jnp.asarray([0.3, 0.3, 0.4, 0.0])

F = jax.jit(lambda a, e: calibrate_all(X, WX, Y, WY, a, e))
J = jax.jit(jax.jacfwd(lambda a, e: calibrate_all(X, WX, Y, WY, a, e), argnums=(0, 1)))


@pytest.mark.acceptance  # gradients vs finite differences of every method at once: ~35 s to compile
def test_gradients_match_finite_differences():
    for a0, e0 in [(3.0, 0.7), (0.6, 0.7), (12.0, 2.0)]:
        jac_all = J(a0, e0)  # {method: (d/dalpha, d/deps)}
        ja = {k: v[0] for k, v in jac_all.items()}
        je = {k: v[1] for k, v in jac_all.items()}
        for wrt, jac in (("alpha", ja), ("epsilon", je)):
            v0 = a0 if wrt == "alpha" else e0
            h = 1e-5 * v0
            fp = F(a0 + h, e0) if wrt == "alpha" else F(a0, e0 + h)
            fm = F(a0 - h, e0) if wrt == "alpha" else F(a0, e0 - h)
            for k in jac:
                fd = (float(fp[k]) - float(fm[k])) / (2 * h)
                g = float(jac[k])
                assert abs(g - fd) <= 1e-4 * max(abs(fd), 1e-8), (a0, e0, wrt, k, g, fd)


@pytest.mark.acceptance  # README suite budget (issue 18): jit, eager and vmap programs of every method, ~10 s of XLA
def test_jit_equals_eager_and_vmap():
    # (exact is compared in test_vectors / test_soundness; skipped here to save one compilation)
    methods = [m for m in pf.LAPLACE_METHODS if m != "exact"]
    eager = [float(pf.calibrate_laplace(X, Y, alpha=2.0, epsilon=0.5, method=m, weights_i=WX, weights_j=WY))
             for m in methods]
    jitted = F(2.0, 0.5)
    for m, v in zip(methods, eager):
        np.testing.assert_allclose(float(jitted["laplace_" + m]), v, rtol=1e-12)
    eps = jnp.asarray([0.25, 0.5, 1.0, 2.0])
    vm = jax.jit(jax.vmap(lambda e: pf.calibrate_gaussian(X, Y, alpha=3.0, epsilon=e, weights_i=WX, weights_j=WY)))(eps)
    for k, e in enumerate(eps):
        np.testing.assert_allclose(float(vm[k]), float(pf.calibrate_gaussian(X, Y, alpha=3.0, epsilon=float(e),
                                                                             weights_i=WX, weights_j=WY)), rtol=1e-12)
    # vmap over weights
    W = jnp.stack([WX, WX[::-1]])
    vw = jax.vmap(lambda w: pf.calibrate_laplace(X, Y, alpha=2.0, epsilon=1.0, method="tight", weights_i=w,
                                                 weights_j=WY))(W)
    np.testing.assert_allclose(float(vw[1]), float(pf.calibrate_laplace(X, Y, alpha=2.0, epsilon=1.0, method="tight",
                                                                        weights_i=WX[::-1], weights_j=WY)), rtol=1e-12)
