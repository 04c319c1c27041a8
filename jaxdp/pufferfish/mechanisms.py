r"""Mechanisms that run: calibrate once, then perturb query outputs (PRNG key in, noisy output out).

:class:`AdditiveNoiseMechanism` is a frozen description (noise family, scale, alpha, epsilon,
method) registered as a PyTree (scale / alpha / epsilon are leaves, so it passes through ``jit``);
``mechanism.perturb(key, outputs)`` adds i.i.d. noise of the output's shape (any batch shape).

Noise families: ``"laplace"`` (density :math:`e^{-|z|/b}/2b` per coordinate, = exp-family cost
:math:`\|z\|_1`), ``"gaussian"`` (std ``scale``), ``"l2"`` (density :math:`\propto e^{-\|z\|_2/b}` on
:math:`\mathbb R^d`: radius :math:`\sim\Gamma(d, b)`, direction uniform; last axis = d).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._pytree import pytree_dataclass
from .calibration import calibrate_laplace, calibrate_gaussian, calibrate_exponential_family


def sample_noise(key, shape, *, noise, scale):
    """Noise of ``shape`` for ``noise`` in {"laplace", "gaussian", "l2"} (l2: last axis is d)."""
    scale = jnp.asarray(scale, jnp.float64)
    if noise == "laplace":
        return scale * jax.random.laplace(key, shape, jnp.float64)
    if noise == "gaussian":
        return scale * jax.random.normal(key, shape, jnp.float64)
    if noise == "l2":
        d = shape[-1]
        k1, k2 = jax.random.split(key)
        u = jax.random.normal(k1, shape, jnp.float64)
        u = u / jnp.linalg.norm(u, axis=-1, keepdims=True)
        r = jax.random.gamma(k2, float(d), shape[:-1], jnp.float64) * scale
        return u * r[..., None]
    raise ValueError(f"noise must be one of ['gaussian', 'l2', 'laplace'], got {noise!r}")


@pytree_dataclass(static=("noise", "method"))
class AdditiveNoiseMechanism:
    """M(X) = f(X) + Z with Z ~ ``noise``(``scale``), calibrated for (alpha, epsilon)-RPP by ``method``."""

    scale: jax.Array
    alpha: jax.Array
    epsilon: jax.Array
    noise: str = "laplace"
    method: str = "theorem1"

    def perturb(self, key, outputs):
        """Noisy ``outputs`` (any shape; batched queries are batched outputs)."""
        outputs = jnp.asarray(outputs, jnp.float64)
        return outputs + sample_noise(key, outputs.shape, noise=self.noise, scale=self.scale)

    __call__ = perturb


def laplace_mechanism(samples_i, samples_j, *, alpha, epsilon, method="theorem1", weights_i=None, weights_j=None):
    """Calibrate a Laplace mechanism (see :func:`calibrate_laplace`) and return it ready to run."""
    b = calibrate_laplace(samples_i, samples_j, alpha=alpha, epsilon=epsilon, method=method,
                          weights_i=weights_i, weights_j=weights_j)
    return AdditiveNoiseMechanism(b, jnp.asarray(alpha, jnp.float64), jnp.asarray(epsilon, jnp.float64),
                                  "laplace", method)


def gaussian_mechanism(samples_i, samples_j, *, alpha, epsilon, method="theorem2", weights_i=None, weights_j=None):
    """Calibrate a Gaussian mechanism (see :func:`calibrate_gaussian`); ``scale`` is sigma."""
    s = calibrate_gaussian(samples_i, samples_j, alpha=alpha, epsilon=epsilon, method=method,
                           weights_i=weights_i, weights_j=weights_j)
    return AdditiveNoiseMechanism(s, jnp.asarray(alpha, jnp.float64), jnp.asarray(epsilon, jnp.float64),
                                  "gaussian", method)


def exponential_family_mechanism(samples_i, samples_j, *, alpha, epsilon, cost="l2", weights_i=None,
                                 weights_j=None, **kwargs):
    """Calibrate exp-family noise with cost ``"l1"`` (product Laplace) or ``"l2"`` on R^d."""
    b, _ = calibrate_exponential_family(samples_i, samples_j, alpha=alpha, epsilon=epsilon, cost=cost,
                                        weights_i=weights_i, weights_j=weights_j, **kwargs)
    noise = "laplace" if cost in ("abs", "l1") else "l2"
    return AdditiveNoiseMechanism(b, jnp.asarray(alpha, jnp.float64), jnp.asarray(epsilon, jnp.float64),
                                  noise, "expfam-" + cost)


__all__ = ["AdditiveNoiseMechanism", "sample_noise", "laplace_mechanism", "gaussian_mechanism",
           "exponential_family_mechanism"]
