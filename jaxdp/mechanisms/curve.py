"""A trade-off curve as a mechanism: the discrete dominating pair of a piecewise-linear curve.

With it any curve (e.g. a composed or externally computed one) enters the PLD engine like any other
mechanism, which is how :func:`jaxdp.core.tradeoff.compose` composes curves.
"""

from __future__ import annotations

import jax.numpy as jnp

from .base import pytree_dataclass

__all__ = ["CurvePair"]


@pytree_dataclass
class CurvePair:
    """The discrete dominating pair whose trade-off curve T(B, A) is a :class:`PiecewiseLinear`.

    Segment k (between vertices k and k+1) is an atom with B-mass ``a_{k+1} - a_k`` and A-mass
    ``f_k - f_{k+1}`` at loss ``log(dA/dB)``; ``1 - f_0`` is A-mass at loss +inf and ``1 - a_last``
    B-mass at loss -inf.  Direction "add" uses the reversed pair (the curve's inverse).  This makes
    any curve a mechanism for the PLD engine, so curves compose through :func:`compose`.
    """

    curve: object  # a jaxdp.core.piecewise.PiecewiseLinear

    def prepare(self):
        return self

    def gdp_mu(self):
        return jnp.asarray(jnp.inf, jnp.float64)  # no certificate is derived from an arbitrary curve

    def _atoms(self, direction):
        c = self.curve if direction == "remove" else self.curve.inverse()
        da = jnp.diff(c.a)
        dA = -jnp.diff(c.f)
        ok = (da > 0) & (dA > 0)
        loss = jnp.where(ok, jnp.log(jnp.where(ok, dA, 1.0)) - jnp.log(jnp.where(ok, da, 1.0)), -jnp.inf)
        # atoms with A-mass but no B-mass are at +inf
        inf_extra = jnp.sum(jnp.where((da <= 0) & (dA > 0), dA, 0.0))
        order = jnp.argsort(loss)
        return loss[order], jnp.where(ok, dA, 0.0)[order], jnp.where(ok, da, 0.0)[order], 1.0 - c.f[0] + inf_extra

    def privacy_loss_sf(self, x, direction: str):
        loss, mA, mB, inf_a = self._atoms(direction)
        x = jnp.asarray(x, dtype=jnp.float64)
        tailA = jnp.cumsum(mA[::-1])[::-1]
        tailB = jnp.cumsum(mB[::-1])[::-1]
        idx = jnp.searchsorted(loss, x, side="right")  # first atom with loss > x
        n = loss.shape[0]
        sa = jnp.where(idx < n, tailA[jnp.minimum(idx, n - 1)], 0.0) + inf_a
        sb = jnp.where(idx < n, tailB[jnp.minimum(idx, n - 1)], 0.0)
        sa = jnp.where(jnp.isposinf(x), inf_a, sa)
        return sa, sb

    def privacy_loss_range(self, direction: str, tail: float):
        loss, mA, _, _ = self._atoms(direction)
        fin = jnp.isfinite(loss) & (mA > 0)
        lo = jnp.min(jnp.where(fin, loss, jnp.inf))
        hi = jnp.max(jnp.where(fin, loss, -jnp.inf))
        return lo - 1e-9, jnp.maximum(hi, lo + 1e-6)
