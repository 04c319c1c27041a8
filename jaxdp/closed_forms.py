r"""The closed forms every accountant shares, written once (unchecked: callers validate their inputs).

* :func:`gaussian_curve`: the Gaussian trade-off curve :math:`G_\mu(a) = \Phi(\Phi^{-1}(1 - a) - \mu)`
  (Dong, Roth & Su 2022, Definition 2.7).
* :func:`gaussian_delta` / :func:`gaussian_delta_terms` / :func:`gaussian_log_delta_terms`: its
  privacy profile :math:`\delta_\mu(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2) -
  e^{\varepsilon}\Phi(-\varepsilon/\mu - \mu/2)` (Balle & Wang 2018; Dong, Roth & Su 2022,
  Corollary 2.13), whole, as its two terms (callers that bound each term's rounding), and as their
  logarithms (for large epsilon).
* :func:`gaussian_tv` and :func:`gaussian_mu_of_tv`: the total-variation gap :math:`2\Phi(\mu/2) - 1`
  of :math:`G_\mu` and its inverse.
* :func:`ratio_variance`: :math:`e^{1/\sigma^2} - 1`, the variance of the likelihood ratio of
  :math:`N(1, \sigma^2)` to :math:`N(0, \sigma^2)` (a chi-square divergence).
* :func:`poisson_clt_mu` (Bu, Dong, Long & Su 2020), :func:`drs_clt_mu` (Dong, Roth & Su 2022) and
  :func:`shuffle_clt_mu` (the shuffle spec, section 4): central-limit mus of Poisson-subsampled and shuffled DP-SGD.  **Approximations, not
  bounds**: every caller says so where it uses them.

The lowest layer of the package (it imports nothing of jaxdp but its special functions), so that
mechanisms, the core and the presets all import it.  :math:`\Phi` is ``jax.scipy.special.ndtr``:
with it a sweep sharded over eight devices returns the same bits as an unsharded one
(``tests/sweep``); with the single-``erfc`` ``jaxdp._special.ndtr`` of the PLD engine 31 of 111
points differed in their last bits (7e-13 relative at most).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax.scipy.special import erf, ndtr, ndtri

from ._special import log_ndtr

_INV_2SQRT2 = 1.0 / (2.0 * math.sqrt(2.0))


def gaussian_curve(a, mu):
    r""":math:`G_\mu(a) = \Phi(-\Phi^{-1}(a) - \mu)`."""
    return ndtr(-ndtri(a) - mu)


def gaussian_delta_terms(eps, mu):
    r"""The two terms :math:`(\Phi(-\varepsilon/\mu + \mu/2),\ e^{\varepsilon}\Phi(-\varepsilon/\mu - \mu/2))` of the profile."""
    return ndtr(-eps / mu + mu / 2), jnp.exp(eps + log_ndtr(-eps / mu - mu / 2))


def gaussian_log_delta_terms(eps, mu):
    """The logarithms of :func:`gaussian_delta_terms` (finite for any epsilon)."""
    return log_ndtr(-eps / mu + mu / 2), eps + log_ndtr(-eps / mu - mu / 2)


def gaussian_delta(eps, mu):
    r"""The privacy profile :math:`\delta_\mu(\varepsilon)` of :math:`G_\mu`."""
    a, b = gaussian_delta_terms(eps, mu)
    return a - b


def gaussian_tv(mu):
    r""":math:`2\Phi(\mu/2) - 1 = \operatorname{erf}(\mu / (2\sqrt 2))` (no cancellation at small mu)."""
    return erf(mu * _INV_2SQRT2)


def gaussian_mu_of_tv(tv):
    r"""The mu of :math:`G_\mu` whose gap :func:`gaussian_tv` is ``tv``: :math:`2\Phi^{-1}((1 + tv)/2)`."""
    return 2.0 * ndtri((1.0 + tv) / 2.0)


def ratio_variance(sigma):
    r""":math:`e^{1/\sigma^2} - 1`."""
    return jnp.expm1(1.0 / sigma**2)


def poisson_clt_mu(sigma, q, steps):
    r"""Bu, Dong, Long & Su (2020): :math:`\mu = q\sqrt{T(e^{1/\sigma^2} - 1)}` (an approximation)."""
    return q * jnp.sqrt(steps * ratio_variance(sigma))


def drs_clt_mu(sigma, q, steps):
    r"""Dong, Roth & Su (2022): :math:`\mu = \sqrt 2\, q\sqrt T\sqrt{e^{1/\sigma^2}\Phi(1.5/\sigma) + 3\Phi(-0.5/\sigma) - 2}` (an approximation)."""
    s = 1.0 / sigma
    inner = jnp.exp(s * s) * ndtr(1.5 * s) + 3.0 * ndtr(-0.5 * s) - 2.0
    return math.sqrt(2.0) * q * jnp.sqrt(steps) * jnp.sqrt(inner)


def shuffle_clt_mu(sigma, rounds, epochs):
    r"""E shuffled epochs of M rounds: :math:`\mu = \sqrt{E(e^{1/\sigma^2} - 1)/M}` (an approximation)."""
    return jnp.sqrt(epochs * ratio_variance(sigma) / rounds)


__all__ = [
    "gaussian_curve", "gaussian_delta", "gaussian_delta_terms", "gaussian_log_delta_terms", "gaussian_tv",
    "gaussian_mu_of_tv", "ratio_variance", "poisson_clt_mu", "drs_clt_mu", "shuffle_clt_mu",
]
