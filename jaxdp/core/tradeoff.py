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

import jax.numpy as jnp

from .. import _config  # noqa: F401
from .._validate import check, nan_where_invalid
from .._config import jit
from ..roots import find_root, implicit
from .. import closed_forms as _cf
from ..mechanisms.curve import CurvePair
from . import pld as _pld
from .piecewise import PiecewiseLinear

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
    return nan_where_invalid(_cf.gaussian_curve(a, mu), oka & okm)


def gaussian_delta(epsilon, mu):
    r"""Profile of :math:`G_\mu`: :math:`\delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2) - e^{\varepsilon}\Phi(-\varepsilon/\mu - \mu/2)`.

    (Balle & Wang 2018; Dong, Roth & Su 2022, Corollary 2.13.)
    """
    eps, oke = check("epsilon", epsilon)
    mu, okm = check("mu", mu, lo=0.0, lo_open=True)
    return nan_where_invalid(gaussian_delta_unchecked(eps, mu), oke & okm)


def gaussian_delta_unchecked(eps, mu):
    """:func:`gaussian_delta` without argument checks, for callers that validated already (inside ``jit``)."""
    return _cf.gaussian_delta(eps, mu)


def gaussian_epsilon(delta, mu):
    r"""Smallest :math:`\varepsilon \ge 0` with :math:`\delta_{G_\mu}(\varepsilon) \le \delta` (to 1e-14 relative, the feasible side;
    :func:`jaxdp.roots.find_root`, implicit gradients)."""
    delta, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    mu, okm = check("mu", mu, lo=0.0, lo_open=True)
    delta = jnp.where(okd, delta, 0.5)
    mu = jnp.where(okm, mu, 1.0)

    return nan_where_invalid(_gaussian_epsilon(delta, mu), okd & okm)


def _gaussian_delta_of(e, m):
    return gaussian_delta_unchecked(e, m)


def _gaussian_epsilon_one(d, m):
    top = m * m / 2 + m * 40.0 + 1.0  # delta_G(top) < Phi(-40): below any delta
    r = find_root(_gaussian_delta_of, d, m, decreasing=True, lower=0.0, upper=top, lower_limit=0.0,
                  upper_limit=top, rtol=1e-14, max_steps=200, method="bisection")
    return implicit(_gaussian_delta_of, r.x, r.at_limit, d, m)


@jit
def _gaussian_epsilon(delta, mu):
    # jitted: an eager call would otherwise trace and compile the search loop on every call
    return jnp.vectorize(_gaussian_epsilon_one)(delta, mu)


def eps_delta(a, epsilon, delta):
    r""":math:`f_{\varepsilon,\delta}(a) = \max\{0,\ 1 - \delta - e^{\varepsilon} a,\ e^{-\varepsilon}(1 - \delta - a)\}`."""
    a = jnp.asarray(a, dtype=jnp.float64)
    return jnp.maximum(
        0.0, jnp.maximum(1 - delta - jnp.exp(epsilon) * a, jnp.exp(-epsilon) * (1 - delta - a))
    )


def gdp_mu_of_tv(tv):
    r"""The mu of the Gaussian curve with TV gap ``tv``: :math:`2\Phi(\mu/2) - 1 = tv`."""
    return _cf.gaussian_mu_of_tv(jnp.asarray(tv, dtype=jnp.float64))


# ------------------------------------------------------------------------------------------------
# profiles and curves from profiles (piecewise-linear curves: .piecewise, composed by compose below)
# ------------------------------------------------------------------------------------------------


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
    "gaussian_delta_unchecked",
    "gaussian_epsilon",
    "eps_delta",
    "gdp_mu_of_tv",
    "PiecewiseLinear",
    "symmetrize_profile",
    "curve_from_profile",
]


def compose(curves_with_counts, *, grid=None):
    """Certified composition of trade-off curves through the PLD engine.

    ``curves_with_counts``: sequence of ``(PiecewiseLinear, count)``.  Returns
    ``(lower, upper)`` piecewise-linear curves bracketing ``f_1^{(x)k_1} (x) f_2^{(x)k_2} ...``.
    """
    g = grid or _pld.DEFAULT_GRID
    P = _pld.compose([(CurvePair(c), k) for c, k in curves_with_counts], "remove", g)
    return P.curve(pessimistic=True), P.curve(pessimistic=False)


__all__ += ["CurvePair", "compose"]
