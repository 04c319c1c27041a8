r"""Trade-off functions (f-DP; Dong, Roth & Su 2022) and their (eps, delta) profiles.

A trade-off function :math:`f = T(P, Q)` maps a type I error :math:`a` of testing P against Q to the
smallest type II error.  It is convex, non-increasing, continuous and :math:`f(a) \le 1 - a`.
Its privacy profile is the convex conjugate

.. math:: \delta(\varepsilon) = \sup_a \, (1 - a e^{\varepsilon} - f(a)),
   \qquad f(a) = \sup_{\varepsilon} \, (1 - \delta(\varepsilon) - e^{\varepsilon} a),

and the TV gap is :math:`\delta(0) = \sup_a (1 - a - f(a))`.

Closed forms here: the Gaussian curve :math:`G_\mu(a) = \Phi(\Phi^{-1}(1-a) - \mu)`, its profile,
and :math:`f_{\varepsilon,\delta}`.  General curves are :class:`PiecewiseLinear` (the exact curve of a
discrete pair: every PLD in jaxdp converts to one) with exact conversions; composition goes
through the PLD engine (:func:`compose`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr, ndtri

from .. import _config  # noqa: F401
from .._validate import check, nan_where_invalid
from .._special import log_ndtr
from ..mechanisms.base import pytree_dataclass

# ------------------------------------------------------------------------------------------------
# closed forms
# ------------------------------------------------------------------------------------------------


def gaussian(a, mu):
    r"""Gaussian trade-off :math:`G_\mu(a) = \Phi(\Phi^{-1}(1 - a) - \mu)` (mu-GDP).

    Written as :math:`\Phi(-\Phi^{-1}(a) - \mu)` so that tiny ``a`` keeps full relative accuracy.
    ``a`` in [0, 1], ``mu`` >= 0 (``inf`` allowed: the curve is 0).
    """
    a, oka = check("a", a, lo=0.0, hi=1.0)
    mu, okm = check("mu", mu, lo=0.0, allow_inf=True)
    return nan_where_invalid(ndtr(-ndtri(a) - mu), oka & okm)


def gaussian_delta(epsilon, mu):
    r"""Profile of :math:`G_\mu`: :math:`\delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2) - e^{\varepsilon}\Phi(-\varepsilon/\mu - \mu/2)`.

    (Balle & Wang 2018; Dong, Roth & Su 2022, Corollary 2.13.)
    """
    eps, oke = check("epsilon", epsilon)
    mu, okm = check("mu", mu, lo=0.0, lo_open=True)
    return nan_where_invalid(_gauss_delta(eps, mu), oke & okm)


def _gauss_delta(eps, mu):
    return ndtr(-eps / mu + mu / 2) - jnp.exp(eps + log_ndtr(-eps / mu - mu / 2))


def gaussian_epsilon(delta, mu, *, iters: int = 200):
    r"""Smallest :math:`\varepsilon \ge 0` with :math:`\delta_{G_\mu}(\varepsilon) \le \delta` (bisection + one Newton step for gradients)."""
    delta, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    mu, okm = check("mu", mu, lo=0.0, lo_open=True)
    delta = jnp.where(okd, delta, 0.5)
    mu = jnp.where(okm, mu, 1.0)

    def solve(d, m):
        lo, hi = jnp.zeros(()), m * m / 2 + m * 40.0 + 1.0

        def body(_, c):
            lo, hi = c
            mid = 0.5 * (lo + hi)
            big = _gauss_delta(mid, m) > d
            return jnp.where(big, mid, lo), jnp.where(big, hi, mid)

        lo, hi = jax.lax.fori_loop(0, iters, body, (lo, hi))
        e = jax.lax.stop_gradient(hi)
        # one Newton step at the converged root: value unchanged, gradient = implicit function thm
        g = _gauss_delta(e, m) - d
        dg = -jnp.exp(e + log_ndtr(-e / m - m / 2))
        e = e - g / dg
        return jnp.where(_gauss_delta(0.0, m) <= d, 0.0, e)

    return nan_where_invalid(jnp.vectorize(solve)(delta, mu), okd & okm)


def eps_delta(a, epsilon, delta):
    r""":math:`f_{\varepsilon,\delta}(a) = \max\{0,\ 1 - \delta - e^{\varepsilon} a,\ e^{-\varepsilon}(1 - \delta - a)\}`."""
    a = jnp.asarray(a, dtype=jnp.float64)
    return jnp.maximum(
        0.0, jnp.maximum(1 - delta - jnp.exp(epsilon) * a, jnp.exp(-epsilon) * (1 - delta - a))
    )


def gdp_mu_of_tv(tv):
    r"""The mu of the Gaussian curve with TV gap ``tv``: :math:`2\Phi(\mu/2) - 1 = tv`."""
    return 2.0 * ndtri((1.0 + jnp.asarray(tv, dtype=jnp.float64)) / 2.0)


# ------------------------------------------------------------------------------------------------
# piecewise-linear curves: the exact curve of a discrete pair
# ------------------------------------------------------------------------------------------------


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


def symmetrize_profile(delta_fn_1, delta_fn_2, eps_grid):
    """Profile of conv(min(f1, f2)): the pointwise max of the two profiles (conjugate of a min)."""
    return jnp.maximum(delta_fn_1(eps_grid), delta_fn_2(eps_grid))


def curve_from_profile(delta_values, eps_grid, a):
    """Lower bound on f(a) = sup_eps (1 - delta(eps) - e^eps a) from a profile sampled at eps_grid.

    Taking the sup over a finite grid can only lower the value, so with an upper bound on delta this
    is a sound (pessimistic) trade-off curve.
    """
    a = jnp.asarray(a, dtype=jnp.float64)
    vals = 1.0 - delta_values[None, :] - jnp.exp(eps_grid)[None, :] * a.reshape(-1, 1)
    return jnp.clip(jnp.max(vals, axis=1), 0.0, 1.0 - a.reshape(-1)).reshape(a.shape)


__all__ = [
    "gaussian",
    "gaussian_delta",
    "gaussian_epsilon",
    "eps_delta",
    "gdp_mu_of_tv",
    "PiecewiseLinear",
    "symmetrize_profile",
    "curve_from_profile",
]


@pytree_dataclass
class CurvePair:
    """The discrete dominating pair whose trade-off curve T(B, A) is a :class:`PiecewiseLinear`.

    Segment k (between vertices k and k+1) is an atom with B-mass ``a_{k+1} - a_k`` and A-mass
    ``f_k - f_{k+1}`` at loss ``log(dA/dB)``; ``1 - f_0`` is A-mass at loss +inf and ``1 - a_last``
    B-mass at loss -inf.  Direction "add" uses the reversed pair (the curve's inverse).  This makes
    any curve a mechanism for the PLD engine, so curves compose through :func:`compose`.
    """

    curve: PiecewiseLinear

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


def compose(curves_with_counts, *, grid=None):
    """Certified composition of trade-off curves through the PLD engine.

    ``curves_with_counts``: sequence of ``(PiecewiseLinear, count)``.  Returns
    ``(lower, upper)`` piecewise-linear curves bracketing ``f_1^{(x)k_1} (x) f_2^{(x)k_2} ...``.
    """
    from . import pld as _pld

    g = grid or _pld.DEFAULT_GRID
    P = _pld.compose([(CurvePair(c), k) for c, k in curves_with_counts], "remove", g)
    return P.curve(pessimistic=True), P.curve(pessimistic=False)


__all__ += ["CurvePair", "compose"]
