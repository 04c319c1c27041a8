"""Piecewise-linear trade-off curves: the exact curve of a discrete dominating pair.

Every PLD converts to one (:meth:`jaxdp.core.pld.PLD.curve`), and :mod:`jaxdp.core.tradeoff`
re-exports it with the closed-form curves.  It has its own module so that the PLD engine and the
curve conversions both depend on it without depending on each other.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtri

from .. import _config  # noqa: F401  (float64)
from .._pytree import pytree_dataclass

__all__ = ["PiecewiseLinear"]


@pytree_dataclass
class PiecewiseLinear:
    """A trade-off curve given by its vertices ``(a_k, f_k)``, ``a`` increasing, ``f`` decreasing.

    ``a_0 = 0`` with ``f_0 = 1 - (mass at +inf loss)``; after the last vertex ``f = 0``.
    """

    a: jax.Array
    f: jax.Array

    def __call__(self, x):
        x = jnp.asarray(x, dtype=jnp.float64)
        return jnp.clip(jnp.interp(x, self.a, self.f, right=0.0), 0.0, 1.0 - x)

    def delta(self, epsilon):
        """Exact profile: the sup over a is attained at a vertex."""
        eps = jnp.asarray(epsilon, dtype=jnp.float64)
        vals = 1.0 - self.f[None, :] - jnp.exp(eps.reshape(-1, 1)) * self.a[None, :]
        last = 1.0 - jnp.exp(eps.reshape(-1)) * jnp.max(jnp.where(self.f <= 0, self.a, 1.0))
        out = jnp.maximum(jnp.max(vals, axis=1), jnp.maximum(last, 0.0))
        return jnp.clip(out, 0.0, 1.0).reshape(eps.shape)

    def tv_gap(self):
        return self.delta(0.0)

    def gdp_mu(self, a_min: float = 0.0, a_max: float = 1.0):
        """Smallest mu with f >= G_mu on [a_min, a_max]; vertices suffice (G_mu convex, f linear between).

        A discretised curve reaches 0 slightly before a = 1 (its lattice is finite), which strictly
        makes mu infinite (as does the additive roundoff allowance); ``a_max = 1 - 1e-6`` (say) asks for
        the guarantee where it matters; likewise ``a_min = 1e-9`` near a = 0, where an additive
        allowance of 1e-10 on f already exceeds 1 - G_mu(a).
        """
        inner = (self.a > 0) & (self.a < 1) & (self.a <= a_max) & (self.a >= a_min)
        mu = jnp.where(inner, -ndtri(self.a) - ndtri(jnp.clip(self.f, 0.0, 1.0)), -jnp.inf)
        return jnp.maximum(jnp.max(mu), 0.0)

    def inverse(self):
        """f^{-1} = T(Q, P) when f = T(P, Q): reflect the graph in the diagonal."""
        a = jnp.concatenate([jnp.zeros((1,)), self.f[::-1]])
        f = jnp.concatenate([jnp.max(self.a)[None], self.a[::-1]])
        return PiecewiseLinear(a=a, f=f)
