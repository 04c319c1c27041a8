r"""DP-SGD with Poisson subsampling: exact (certified PLD) accounting and CLT approximations.

Mechanism: each of ``num_steps`` steps includes every example independently with probability
``sampling_probability`` q and adds Gaussian noise of std ``noise_multiplier`` sigma (times the
clipping norm).  **Adjacency: add/remove one example** (dp_accounting's ``ADD_OR_REMOVE_ONE``);
``direction="both"`` (default) reports the worse of the two directions, "remove" / "add" one of
them.  Every number is certified: the returned value is the pessimistic end of a bracket
``[lower, upper]`` (see :func:`accountant` for both ends) computed by :mod:`jaxdp.core.pld`.

All functions are jit-able and vmap-able over their numeric arguments (shapes broadcast); gradients
w.r.t. ``noise_multiplier``, ``sampling_probability``, ``delta`` and ``epsilon`` are available.
Invalid input raises ``ValueError`` eagerly and gives NaN under ``jit``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from . import _config  # noqa: F401
from ._batch import broadcast_map
from ._validate import check, check_broadcast, check_choice, nan_where_invalid
from .core import pld as _pld
from .core import tradeoff as _tf
from .mechanisms.gaussian import SubsampledGaussian

ADJACENCY = "add/remove one example (Poisson subsampling)"
_DIRECTIONS = ("both", "remove", "add")


def _validate(noise_multiplier, sampling_probability, num_steps):
    check_broadcast(noise_multiplier=noise_multiplier, sampling_probability=sampling_probability, num_steps=num_steps)
    s, ok1 = check("noise_multiplier", noise_multiplier, lo=0.0, lo_open=True)
    q, ok2 = check("sampling_probability", sampling_probability, lo=0.0, hi=1.0, lo_open=True)
    t, ok3 = check("num_steps", num_steps, lo=1.0, integer=True)
    return s, q, t, ok1 & ok2 & ok3


def _safe(x, ok, default):
    return jnp.where(ok, x, default)


# eps(delta) knows delta: on two-stage grids (the default, size >= 2^18) a per-step tail of
# 1e-3 delta / T and a window tail of 1e-7 delta (both masses are accounted pessimistically, so they
# move delta by ~1e-3 relative, about 1e-4 relative in eps) narrow the lattice 2-3x compared with
# the absolute defaults (1e-20, 1e-17), which is what brings the bracket width under 1% for large
# T; one-stage grids (smaller sizes, or Grid(stages=1)) keep the absolute tails, and with them the
# tightest upper value (the speed benchmark measures that configuration)
_TAIL_PER_DELTA = 1e-3
_WINDOW_TAIL_PER_DELTA = 1e-7


def _plds(sigma, q, steps, direction, grid, delta=None):
    m = SubsampledGaussian(noise_multiplier=sigma, sampling_probability=q)
    k = steps.astype(jnp.int64)
    dirs = ("remove", "add") if direction == "both" else (direction,)
    kw = {}
    if delta is not None and grid.num_stages() == 2:
        kw = dict(
            tail=jnp.maximum(_TAIL_PER_DELTA * delta / jnp.maximum(steps, 1.0), grid.tail),
            window_tail=jnp.maximum(_WINDOW_TAIL_PER_DELTA * delta, grid.window_tail),
        )
    return [_pld.self_compose(m, k, d, grid, **kw) for d in dirs]


Bracket = _pld.Bracket


@functools.partial(jax.jit, static_argnames=("direction", "grid", "upper_only"))
def _eps_core(d, s, q, t, ok, direction, grid, upper_only=False):
    fn = lambda d_, s_, q_, t_: _eps_scalar(d_, s_, q_, t_, direction, grid, upper_only)  # noqa: E731
    d, s, q, t, ok = jnp.broadcast_arrays(d, s, q, t, ok)
    lo, up = broadcast_map(fn, _safe(d, ok, 1e-5), _safe(s, ok, 1.0), _safe(q, ok, 0.5), _safe(t, ok, 1.0))
    return nan_where_invalid(lo, ok), nan_where_invalid(up, ok)


@functools.partial(jax.jit, static_argnames=("direction", "grid"))
def _delta_core(e, s, q, t, ok, direction, grid):
    fn = lambda e_, s_, q_, t_: _delta_scalar(e_, s_, q_, t_, direction, grid)  # noqa: E731
    e, s, q, t, ok = jnp.broadcast_arrays(e, s, q, t, ok)
    lo, up = broadcast_map(fn, _safe(e, ok, 1.0), _safe(s, ok, 1.0), _safe(q, ok, 0.5), _safe(t, ok, 1.0))
    return nan_where_invalid(lo, ok), nan_where_invalid(up, ok)


@functools.partial(jax.jit, static_argnames=("direction", "grid", "num_eps"))
def _tradeoff_core(a, oka, s, q, t, ok, direction, grid, num_eps):
    s, q, t, ok = jnp.broadcast_arrays(s, q, t, ok)

    def fn(s_, q_, t_):
        return _tradeoff_scalar_params(a, s_, q_, t_, direction, grid, num_eps)

    lo, up = broadcast_map(fn, _safe(s, ok, 1.0), _safe(q, ok, 0.5), _safe(t, ok, 1.0))
    okb = ok.reshape(ok.shape + (1,) * a.ndim) & oka
    return nan_where_invalid(lo, okb), nan_where_invalid(up, okb)


def _eps_scalar(delta, sigma, q, steps, direction, grid, upper_only=False):
    ps = _plds(sigma, q, steps, direction, grid, delta)
    # eps >= 0 by convention (delta(0) <= delta means the guarantee holds at eps = 0)
    up = jnp.maximum(jnp.max(jnp.stack([p.epsilon_upper(delta) for p in ps])), 0.0)
    if upper_only:  # the plain entry point: skip the lower bound's conversion
        return up, up
    lo = jnp.maximum(jnp.max(jnp.stack([p.epsilon_lower(delta) for p in ps])), 0.0)
    return lo, up


def _delta_scalar(eps, sigma, q, steps, direction, grid):
    ps = _plds(sigma, q, steps, direction, grid)
    up = jnp.max(jnp.stack([p.delta_upper(eps) for p in ps]))
    lo = jnp.max(jnp.stack([p.delta_lower(eps) for p in ps]))
    return lo, up


def epsilon_for_delta_bracket(
    delta, *, noise_multiplier, sampling_probability, num_steps, direction="both", grid=_pld.DEFAULT_GRID
) -> Bracket:
    """Certified bracket on eps(delta); ``.value`` = ``.upper``."""
    check_choice("direction", direction, _DIRECTIONS)
    check_broadcast(delta=delta, noise_multiplier=noise_multiplier, sampling_probability=sampling_probability, num_steps=num_steps)
    d, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    lo, up = _eps_core(d, s, q, t, ok & okd, direction, grid)
    return Bracket(lower=lo, upper=up, value=up)


def epsilon_for_delta(delta, *, noise_multiplier, sampling_probability, num_steps, direction="both", grid=_pld.DEFAULT_GRID):
    r"""Certified upper bound on :math:`\varepsilon(\delta)` after ``num_steps`` Poisson-subsampled Gaussian steps.

    Example::

        >>> float(epsilon_for_delta(1e-5, noise_multiplier=1.0, sampling_probability=0.01, num_steps=1000))  # doctest: +ELLIPSIS
        1.828...
    """
    check_choice("direction", direction, _DIRECTIONS)
    check_broadcast(delta=delta, noise_multiplier=noise_multiplier, sampling_probability=sampling_probability, num_steps=num_steps)
    d, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    return _eps_core(d, s, q, t, ok & okd, direction, grid, upper_only=True)[1]


def delta_for_epsilon_bracket(
    epsilon, *, noise_multiplier, sampling_probability, num_steps, direction="both", grid=_pld.DEFAULT_GRID
) -> Bracket:
    check_choice("direction", direction, _DIRECTIONS)
    check_broadcast(epsilon=epsilon, noise_multiplier=noise_multiplier, sampling_probability=sampling_probability, num_steps=num_steps)
    e, oke = check("epsilon", epsilon)
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    lo, up = _delta_core(e, s, q, t, ok & oke, direction, grid)
    return Bracket(lower=lo, upper=up, value=up)


def delta_for_epsilon(epsilon, *, noise_multiplier, sampling_probability, num_steps, direction="both", grid=_pld.DEFAULT_GRID):
    r"""Certified upper bound on the hockey-stick :math:`\delta(\varepsilon)` (worse direction by default)."""
    return delta_for_epsilon_bracket(
        epsilon, noise_multiplier=noise_multiplier, sampling_probability=sampling_probability,
        num_steps=num_steps, direction=direction, grid=grid,
    ).upper


def _tradeoff_scalar_params(a, sigma, q, steps, direction, grid, num_eps):
    ps = _plds(sigma, q, steps, direction, grid)
    if len(ps) == 1:
        p = ps[0]
        return p.tradeoff_lower(a), p.tradeoff_upper(a)
    # both directions: a curve valid for every ordered pair of neighbours is conv(min(f_r, f_a)),
    # whose profile is max(delta_r, delta_a); the sup over a finite eps grid keeps it a lower bound.
    pr, pa = ps
    hi = jnp.maximum(pr.losses[-1], pa.losses[-1])
    eps = jnp.concatenate([-jnp.geomspace(1e-6, 1.0, num_eps // 4)[::-1] * hi, jnp.linspace(0.0, 1.0, num_eps - num_eps // 4) * hi])
    prof = jnp.maximum(pr.delta_upper(eps), pa.delta_upper(eps))
    # (the pointwise min(f_r, f_a) is also a valid bound but not convex, i.e. not a trade-off
    # function; the property suite found a point where it lies 3.7e-3 above a chord)
    lo_curve = _tf.curve_from_profile(prof, eps, a)
    up_curve = jnp.minimum(pr.tradeoff_upper(a), pa.tradeoff_upper(a))
    return lo_curve, up_curve


def tradeoff_bracket(a, *, noise_multiplier, sampling_probability, num_steps, direction="both", grid=_pld.DEFAULT_GRID, num_eps: int = 4096):
    """Bracket on the trade-off curve at type I errors ``a`` (any shape); ``.value`` = lower bound."""
    check_choice("direction", direction, _DIRECTIONS)
    a, oka = check("a", a, lo=0.0, hi=1.0)
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    lo, up = _tradeoff_core(a, oka, s, q, t, ok, direction, grid, num_eps)
    return Bracket(lower=lo, upper=up, value=lo)


def tradeoff(a, *, noise_multiplier, sampling_probability, num_steps, direction="both", grid=_pld.DEFAULT_GRID):
    r"""Certified lower bound on the trade-off curve :math:`f(a)` (a sound f-DP guarantee).

    With array parameters the result has shape ``params.shape + a.shape``.
    ``direction="remove"`` gives T(M(D'), M(D)) for D' = D minus one example, ``"add"`` the
    reverse pair, ``"both"`` a curve valid for every ordered pair (convex hull of their minimum).
    """
    return tradeoff_bracket(
        a, noise_multiplier=noise_multiplier, sampling_probability=sampling_probability,
        num_steps=num_steps, direction=direction, grid=grid,
    ).lower


# ------------------------------------------------------------------------------------------------
# CLT approximations (approximations, not bounds)
# ------------------------------------------------------------------------------------------------


def mu_clt_bu(*, noise_multiplier, sampling_probability, num_steps):
    r"""Bu, Dong, Long & Su (2020) CLT: :math:`\mu = q\sqrt{T(e^{1/\sigma^2} - 1)}` (an approximation)."""
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    return nan_where_invalid(q * jnp.sqrt(t * jnp.expm1(1.0 / s**2)), ok)


def mu_clt_dong_roth_su(*, noise_multiplier, sampling_probability, num_steps):
    r"""Dong, Roth & Su (2022) CLT: :math:`\mu = \sqrt{2}\, q\sqrt{T}\sqrt{e^{1/\sigma^2}\Phi(1.5/\sigma) + 3\Phi(-0.5/\sigma) - 2}`."""
    from jax.scipy.special import ndtr

    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    inner = jnp.exp(1.0 / s**2) * ndtr(1.5 / s) + 3.0 * ndtr(-0.5 / s) - 2.0
    return nan_where_invalid(jnp.sqrt(2.0) * q * jnp.sqrt(t) * jnp.sqrt(inner), ok)


__all__ = [
    "ADJACENCY",
    "Bracket",
    "epsilon_for_delta",
    "epsilon_for_delta_bracket",
    "delta_for_epsilon",
    "delta_for_epsilon_bracket",
    "tradeoff",
    "tradeoff_bracket",
    "mu_clt_bu",
    "mu_clt_dong_roth_su",
]
