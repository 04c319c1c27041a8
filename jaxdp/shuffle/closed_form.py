"""Closed-form bounds for DP-SGD with random shuffling (one differing example, Gaussian noise).

Model (``docs/shuffle_closed_form.md``, spec section 1) [D]: one epoch of M rounds is the test

.. math::

    P = N(0, I_M) \\quad\\text{vs}\\quad Q = \\frac1M \\sum_{j=1}^M N(e_j/\\sigma, I_M),

with likelihood ratio :math:`L = 1 + U/\\sqrt M`, :math:`U = \\sum_j (Y_j - 1)/\\sqrt M`,
:math:`Y_j = e^{x_j/\\sigma - 1/(2\\sigma^2)}` i.i.d. lognormal under P, :math:`E Y = 1`,
:math:`v = \\operatorname{Var} Y = e^{1/\\sigma^2} - 1`.  E epochs are E independent reshuffles,
so the E-fold f-DP composition is exact for this model.

Tags (as in the spec): **[P]** stated in the paper's abstract, **[R]** reconstruction that
reproduces the paper's numbers (its constants are named keyword parameters), **[D]** standard
derivation.

Conventions.  Every function is pure JAX: numbers (sigma, M, E, a, delta, constants) may be
traced, so ``jit``/``vmap``/``grad`` work over them; M is a *real* number here (the formulas are
smooth in M), round it up yourself when you need an integer count.  Eager invalid input raises
``ValueError`` naming the argument; traced invalid input gives NaN (never a plausible number).
Float64 is enabled on import (:mod:`jaxdp._config`).

References:
    M. van Dijk, M. B. Ertan, "Trade-off Functions for DP-SGD with Subsampling based on Random
    Shuffling: Tight Upper and Lower Bounds", arXiv:2605.06259 (2026).
    M. B. Ertan, M. van Dijk, arXiv:2601.10237 (impossibility below the regime).
    I. Shevtsova, "On the absolute constants in the Berry-Esseen type inequalities" (2010/2011):
    C = 0.56 (non-identical summands), C = 0.4748 (i.i.d.).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from jaxdp import _config  # noqa: F401  (float64)
from jaxdp import closed_forms as _cf
from jaxdp._validate import check, nan_where_invalid
from ._common import _alpha, _epochs, _mu_curve, _rounds, _sigma

__all__ = [
    "REGIME_NAMES",
    "Regime",
    "compose_delta",
    "delta_b",
    "delta_berry_esseen",
    "delta_linear_test",
    "gaussian_tradeoff",
    "impossibility_gap",
    "impossibility_threshold",
    "regime",
    "regime_threshold",
    "rho",
    "rounds_berry_esseen",
    "samples",
    "tradeoff_berry_esseen",
    "tradeoff_linear_test",
    "variance",
]

#: Shevtsova's Berry-Esseen constant for sums of non-identically distributed summands [R].
BERRY_ESSEEN_C = 0.56
#: Constant of the alternative bound ``delta_b`` [R].
BERRY_ESSEEN_C_B = 0.7975




def gaussian_tradeoff(a, mu):
    """Gaussian trade-off function :math:`G_\\mu(a) = \\Phi(\\Phi^{-1}(1-a) - \\mu)` [D].

    Computed as ``ndtr(-ndtri(a) - mu)`` (``Phi^{-1}(1-a) = -Phi^{-1}(a)``), accurate for tiny a.
    """
    a, ok_a = _alpha(a)
    mu, ok_m = check("mu", mu, lo=0.0)
    return nan_where_invalid(_cf.gaussian_curve(a, mu), ok_a & ok_m)




def _rho(s):
    # E|Y-1|^3 = E(Y-1)^3 + 2 E[(1-Y)^3 1{Y<1}];  Y < 1 iff Z < s/2 and
    # E[Y^k 1{Z < s/2}] = e^{k(k-1)s^2/2} Phi(s/2 - k s).   expm1 keeps the s -> 0 end accurate.
    s2 = s * s
    third = jnp.expm1(3.0 * s2) - 3.0 * jnp.expm1(s2)  # e^{3s^2} - 3e^{s^2} + 2
    lower = (
        ndtr(s / 2)
        - 3.0 * ndtr(-s / 2)
        + 3.0 * jnp.exp(s2) * ndtr(-1.5 * s)
        - jnp.exp(3.0 * s2) * ndtr(-2.5 * s)
    )
    return third + 2.0 * lower


def rho(sigma):
    """Third absolute central moment :math:`\\rho = E|Y - 1|^3` of the lognormal Y [D].

    .. math::

        \\rho = e^{3s^2} - 3e^{s^2} + 2 + 2\\big[\\Phi(s/2) - 3\\Phi(-s/2)
                + 3e^{s^2}\\Phi(-3s/2) - e^{3s^2}\\Phi(-5s/2)\\big],\\qquad s = 1/\\sigma.

    ``rho(1) = 14.302547``.  For very large sigma (s -> 0) rho ~ 2 sqrt(2/pi) s^3 and the
    O(1) terms cancel: relative accuracy ~1e-16 / s^3 (1e-10 at sigma = 100).
    """
    sigma, ok = _sigma(sigma)
    return nan_where_invalid(_rho(1.0 / sigma), ok)


def variance(sigma):
    """:math:`v = \\operatorname{Var}_P Y = e^{1/\\sigma^2} - 1` (also chi^2(Q||P) * M) [D]."""
    sigma, ok = _sigma(sigma)
    return nan_where_invalid(_cf.ratio_variance(sigma), ok)


def _ratio(sigma):
    # rho / v^{3/2}: standardised third absolute moment of one summand.
    s = 1.0 / sigma
    return _rho(s) / jnp.expm1(s * s) ** 1.5


def delta_berry_esseen(sigma, M, *, C=BERRY_ESSEEN_C):
    """Single-epoch Berry-Esseen delta [P]+[R] (paper's Theorem 4.1, reconstructed).

    .. math::

        \\delta_{BE}(\\sigma, M) = \\frac{3 C \\rho(\\sigma)}{v^{3/2}\\sqrt M},\\qquad C = 0.56,

    so that f(a) >= 1 - a - delta_BE for sigma >= sqrt(3/ln M) (see :func:`regime`).  The factor
    3 = one Berry-Esseen error under P plus at most two under Q [R].  The value is returned as is
    (it may exceed 1, i.e. be vacuous); it is only a valid bound inside the regime.
    """
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    C, ok_c = check("C", C, lo=0.0, lo_open=True)
    d = 3.0 * C * _ratio(sigma) / jnp.sqrt(M)
    return nan_where_invalid(d, ok_s & ok_m & ok_c)


def delta_b(sigma, M, *, C_B=BERRY_ESSEEN_C_B):
    """Alternative single-epoch delta [R] (nearly fits the paper's numbers).

    .. math::

        \\delta_B = \\frac{2 C_B \\rho}{v^{3/2}\\sqrt M} + \\sqrt{\\frac{v}{2\\pi M}},
        \\qquad C_B = 0.7975.
    """
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    C_B, ok_c = check("C_B", C_B, lo=0.0, lo_open=True)
    v = _cf.ratio_variance(sigma)
    d = 2.0 * C_B * _ratio(sigma) / jnp.sqrt(M) + jnp.sqrt(v / (2.0 * jnp.pi * M))
    return nan_where_invalid(d, ok_s & ok_m & ok_c)


def compose_delta(delta, E):
    """Total delta of E epochs each f >= f_{0,delta}: :math:`1 - (1-\\delta)^E` [D].

    ``f_{0,delta}^{(x)E} = f_{0, 1-(1-delta)^E}``; delta is clipped to [0, 1] first.
    """
    delta, ok_d = check("delta", delta, lo=0.0, allow_inf=True)
    E, ok_e = _epochs(E)
    d = jnp.clip(delta, 0.0, 1.0)
    return nan_where_invalid(-jnp.expm1(E * jnp.log1p(-d)), ok_d & ok_e)


# --------------------------------------------------------------------------------------------
# Regime
# --------------------------------------------------------------------------------------------

#: Names of the bands reported by :func:`regime`, indexed by ``Regime.code``.
REGIME_NAMES = ("berry_esseen", "gap", "impossible")


def log_regime_rounds(sigma):
    """log of the fewest rounds inside the Berry-Esseen regime: M >= e^{3/sigma^2} [P]."""
    return 3.0 / sigma**2


def _in_regime(sigma, log_m):
    return log_regime_rounds(sigma) <= log_m


def regime_threshold(M):
    """Smallest sigma where the Berry-Esseen bound applies: :math:`\\sqrt{3/\\ln M}` [P].

    Equivalently e^{3/sigma^2} <= M.  ``+inf`` at M = 1 (no sigma qualifies).
    """
    M, ok = _rounds(M)
    return nan_where_invalid(jnp.sqrt(3.0 / jnp.log(M)), ok)


def impossibility_threshold(M):
    """Impossibility threshold :math:`1/\\sqrt{2\\ln M}` (Ertan & van Dijk) [P].

    Below it, :func:`impossibility_gap` lower-bounds the single-epoch TV.
    """
    M, ok = _rounds(M)
    return nan_where_invalid(1.0 / jnp.sqrt(2.0 * jnp.log(M)), ok)


def impossibility_gap(M):
    """Lower bound on sup_a(1 - a - f(a)) for sigma < 1/sqrt(2 ln M) [P].

    .. math::  \\max\\Big(0, \\tfrac12\\big(1 - 1/\\sqrt{4\\pi\\ln M}\\big)\\Big)

    The max with 0 (vacuous below M = e^{1/(4 pi)} ~ 1.083) keeps it a valid bound for every M.
    """
    M, ok = _rounds(M)
    g = 0.5 * (1.0 - 1.0 / jnp.sqrt(4.0 * jnp.pi * jnp.log(M)))
    return nan_where_invalid(jnp.maximum(g, 0.0), ok)


class Regime(NamedTuple):
    """Which closed form applies at (sigma, M); a pytree, so it can be returned under jit/vmap.

    Fields (arrays broadcast over sigma, M):
        code: 0 = "berry_esseen" (sigma >= sqrt(3/ln M): :func:`delta_berry_esseen` is a valid
            bound), 1 = "gap" (neither closed form; use the exact accountant), 2 = "impossible"
            (sigma < 1/sqrt(2 ln M) and the impossibility bound is non-vacuous).  -1 on invalid
            input under jit.
        berry_esseen_valid: ``code == 0``.
        sigma_min_berry_esseen: :func:`regime_threshold`.
        sigma_max_impossible: :func:`impossibility_threshold`.
        tv_lower_bound: :func:`impossibility_gap` where code == 2, else 0 (always a valid lower
            bound on the single-epoch TV).
    """

    code: object
    berry_esseen_valid: object
    sigma_min_berry_esseen: object
    sigma_max_impossible: object
    tv_lower_bound: object

    @property
    def name(self):
        """Band name(s) as Python str (eager only; under jit use ``code``)."""
        codes = np.asarray(self.code)
        names = np.vectorize(lambda c: REGIME_NAMES[c] if c >= 0 else "invalid", otypes=[object])(
            codes
        )
        return names.item() if names.ndim == 0 else names


def regime(sigma, M):
    """Classify (sigma, M) into the Berry-Esseen / gap / impossible bands [P].

    ``regime(1.0, 1e6).name == "berry_esseen"``; see :class:`Regime`.
    """
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    sigma, M = jnp.broadcast_arrays(sigma, M)
    logM = jnp.log(M)
    be = _in_regime(sigma, logM)
    gap_lb = 0.5 * (1.0 - 1.0 / jnp.sqrt(4.0 * jnp.pi * logM))
    imp = (2.0 * logM * sigma**2 < 1.0) & (gap_lb > 0.0)
    code = jnp.where(be, 0, jnp.where(imp, 2, 1))
    ok = ok_s & ok_m
    code = jnp.where(ok, code, -1)
    return Regime(
        code=code,
        berry_esseen_valid=be & ok,
        sigma_min_berry_esseen=nan_where_invalid(jnp.sqrt(3.0 / logM), ok),
        sigma_max_impossible=nan_where_invalid(1.0 / jnp.sqrt(2.0 * logM), ok),
        tv_lower_bound=nan_where_invalid(jnp.where(imp, gap_lb, 0.0), ok),
    )


# --------------------------------------------------------------------------------------------
# Trade-off bounds
# --------------------------------------------------------------------------------------------


def tradeoff_berry_esseen(a, sigma, M, E=1, *, C=BERRY_ESSEEN_C):
    """Lower bound on the E-epoch trade-off function from the Berry-Esseen delta [P]+[R].

    .. math::

        f^{\\otimes E}(a) \\ge \\max\\big(0, (1 - \\delta_{BE})^E - a\\big)

    (``f_{0,delta}^{(x)E} = f_{0,1-(1-delta)^E}``).  Valid only in the regime
    sigma >= sqrt(3/ln M); **outside it the result is NaN** (no bound is claimed), also eagerly.
    """
    a, ok_a = _alpha(a)
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    E, ok_e = _epochs(E)
    C, ok_c = check("C", C, lo=0.0, lo_open=True)
    d = jnp.clip(3.0 * C * _ratio(sigma) / jnp.sqrt(M), 0.0, 1.0)
    f = jnp.maximum(0.0, jnp.exp(E * jnp.log1p(-d)) - a)
    in_regime = _in_regime(sigma, jnp.log(M))
    return nan_where_invalid(f, ok_a & ok_s & ok_m & ok_e & ok_c & in_regime)


def _mu_linear(sigma, M, E):
    return jnp.sqrt(E) / (sigma * jnp.sqrt(M))


def tradeoff_linear_test(a, sigma, M, E=1):
    """Upper bound on the E-epoch trade-off function from the linear test [D].

    The test on sum_j x_j (summed over epochs) is N(0, EM) vs N(E/sigma, EM), hence

    .. math::  f^{\\otimes E}(a) \\le G_{\\sqrt E/(\\sigma\\sqrt M)}(a),\\quad
               G_\\mu(a) = \\Phi(\\Phi^{-1}(1-a) - \\mu).
    """
    return _mu_curve(_mu_linear, a, sigma, M, E)


def delta_linear_test(sigma, M, E=1):
    """Lower bound on the tight gap sup_a(1 - a - f^{(x)E}(a)) [D].

    .. math::  2\\Phi\\Big(\\frac{\\sqrt E}{2\\sigma\\sqrt M}\\Big) - 1

    (the TV of G_mu, mu = sqrt(E)/(sigma sqrt M), which upper-bounds f).
    """
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    E, ok_e = _epochs(E)
    mu = _mu_linear(sigma, M, E)
    return nan_where_invalid(_cf.gaussian_tv(mu), ok_s & ok_m & ok_e)


# --------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------


def rounds_berry_esseen(delta, sigma, E=1, *, C=BERRY_ESSEEN_C):
    """Rounds per epoch M for which the Berry-Esseen bound certifies total delta over E epochs.

    [P]+[R]:

    .. math::

        \\delta_1 = 1 - (1-\\delta)^{1/E},\\qquad
        M = \\max\\Big(\\Big(\\frac{3 C \\rho}{v^{3/2}\\delta_1}\\Big)^2,\\ e^{3/\\sigma^2}\\Big).

    The second term enforces the regime (it never binds for delta <= 0.05 and sigma >= 0.3).
    Returned as a real number (differentiable); the integer count is ``ceil(M)``.
    sigma = 1, delta = 0.01: M = 1.138e6; with E = 100: 1.127e10.
    """
    delta, ok_d = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    sigma, ok_s = _sigma(sigma)
    E, ok_e = _epochs(E)
    C, ok_c = check("C", C, lo=0.0, lo_open=True)
    d1 = -jnp.expm1(jnp.log1p(-delta) / E)
    m = (3.0 * C * _ratio(sigma) / d1) ** 2
    m = jnp.maximum(m, jnp.exp(log_regime_rounds(sigma)))
    return nan_where_invalid(m, ok_d & ok_s & ok_e & ok_c)


def samples(M, batch_size):
    """Training-set size N = batch_size * M (each epoch visits every example once) [D]."""
    M, ok_m = _rounds(M)
    b, ok_b = check("batch_size", batch_size, lo=1.0)
    return nan_where_invalid(b * M, ok_m & ok_b)
