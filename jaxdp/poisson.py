r"""DP-SGD with Poisson subsampling: exact (certified PLD) accounting and CLT approximations.

Mechanism: each of ``num_steps`` steps includes every example independently with probability
``sampling_probability`` q and adds Gaussian noise of std ``noise_multiplier`` sigma (times the
clipping norm).  **Adjacency: add/remove one example** (``neighboring="add_remove"``, dp_accounting's
``ADD_OR_REMOVE_ONE``; ``"replace_one"`` is refused with :func:`jaxdp.account`'s reason);
``direction="both"`` (default) reports the worse of the two ordered pairs, ``"remove"`` / ``"add"``
one of them: the words of :func:`jaxdp.account` and :mod:`jaxdp.shuffle`.  Every number is certified: the returned value is the pessimistic end of a bracket
``[lower, upper]`` (see :func:`accountant` for both ends) computed by :mod:`jaxdp.core.pld`.

All functions are jit-able and vmap-able over their numeric arguments (shapes broadcast); gradients
w.r.t. ``noise_multiplier``, ``sampling_probability``, ``delta`` and ``epsilon`` are available.
Invalid input raises ``ValueError`` eagerly and gives NaN under ``jit``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ._config import jit
from . import _config  # noqa: F401
from . import _tracecache
from . import closed_forms as _cf
from ._batch import broadcast_map
from ._validate import check, check_broadcast, check_choice, is_traced, nan_where_invalid
from .core import pld as _pld
from .core import tradeoff as _tf
from .core import accuracy as _acc
from . import accountant as _accountant
from .roots import find_root
from . import events as _events
from ._special import log_ndtr as _log_ndtr
from jax.scipy.special import ndtri as _ndtri

ADJACENCY = "add/remove one example (Poisson subsampling)"
_DIRECTIONS = ("both", "remove", "add")


def _check_adjacency(neighboring, direction, noise_multiplier, sampling_probability):
    """The vocabulary of :func:`jaxdp.account`: ``neighboring`` is the relation, ``direction`` the ordered pair."""
    check_choice("neighboring", neighboring, _events.NEIGHBORING)
    check_choice("direction", direction, _DIRECTIONS)
    if neighboring == "replace_one":  # the same refusal, and the same reason, as jaxdp.account's
        _events.components(_events.PoissonSampled(sampling_probability, _events.Gaussian(noise_multiplier)), neighboring)


def _validate(noise_multiplier, sampling_probability, num_steps):
    check_broadcast(noise_multiplier=noise_multiplier, sampling_probability=sampling_probability, num_steps=num_steps)
    s, ok1 = check("noise_multiplier", noise_multiplier, lo=0.0, lo_open=True)
    q, ok2 = check("sampling_probability", sampling_probability, lo=0.0, hi=1.0, lo_open=True)
    t, ok3 = check("num_steps", num_steps, lo=1.0, integer=True)
    return s, q, t, ok1 & ok2 & ok3


def _safe(x, ok, default):
    return jnp.where(ok, x, default)


def _plds(sigma, q, steps, direction, grid, delta=None):
    """The certified PLDs of the requested directions, stacked: :func:`jaxdp.account`'s composition
    of ``SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)`` (:func:`jaxdp.accountant.composed_plds`),
    with the tails of the module's rule above when ``delta`` is given on a two-stage grid."""
    event = _events.SelfComposed(_events.PoissonSampled(q, _events.Gaussian(sigma)), steps)
    dirs = ("remove", "add") if direction == "both" else (direction,)
    return _accountant.composed_plds(event, grid=grid, delta=delta, directions=dirs)


Bracket = _pld.Bracket


# ------------------------------------------------------------------------------------------------
# closed-form references and rigorous guards
# ------------------------------------------------------------------------------------------------
#
# * q = 1 is exactly the Gaussian mechanism with mu = sqrt(T) / sigma (both directions).
# * Post-processing: the T-step pair dominates every m-step marginal (m <= T).  For the remove
#   direction, A >= q^m N(1, s^2)^m as measures on the m-step output (the event "sampled in all m
#   steps"), so delta_T(eps) >= q^m delta_G(eps - m log q; sqrt(m) / s); and one step is exact:
#   delta_1(eps) = q delta_G(log(1 + (e^eps - 1) / q); 1 / s).  In trade-off form:
#   f_T(a) <= u(a) = 1 - q^m (1 - G_{sqrt(m)/s}(a)) and f_T(a) <= q G_{1/s}(a) + (1 - q)(1 - a)
#   (remove, hence "both", whose curve lies below the remove curve); the add curve is the inverse
#   of the remove curve, so f_add <= u^{-1}.
# A returned pessimistic value on the wrong side of one of these is a detected failure: it is
# replaced by the trivial answer (eps = inf, delta = 1, curve 0).  Every closed form is evaluated
# with relative margins 1e-12 (Phi and log Phi are accurate to ~1e-15 relative in float64).

_REL = 1e-12


def _gauss_margins(eps, mu):
    """Relative error allowances of the two terms of :func:`jaxdp.closed_forms.gaussian_delta_terms`.

    The arguments z = -eps/mu -+ mu/2 carry an absolute rounding error of a few ulps of
    |eps/mu| + mu/2; Phi and log Phi turn an argument error e into a relative error of at most
    e (|z| + 2) (the Mills ratio phi/Phi <= |z| + 2); the exponent eps + log Phi(z) adds a few ulps
    of |eps| + |log Phi(z)|.  A flat 1e-12 would be too small at eps ~ 1e6 (log Phi ~ -1e6 there).
    """
    u = 2.0**-52
    za, zb = -eps / mu + mu / 2, -eps / mu - mu / 2
    arg = 4.0 * u * (jnp.abs(eps / mu) + mu / 2 + 1.0)
    rel_a = _REL + arg * (jnp.abs(za) + 2.0)
    lnd = _log_ndtr(zb)
    rel_b = _REL + arg * (jnp.abs(zb) + 2.0) + 4.0 * u * (jnp.abs(eps) + jnp.abs(lnd)) + 1e-14 * jnp.abs(lnd)
    return rel_a, jnp.expm1(jnp.minimum(rel_b, 1.0))


def _gauss_delta_bounds(eps, mu):
    """(lower, upper) on delta_G(eps) of G_mu, in the log domain (eps may be huge)."""
    a, b = _cf.gaussian_delta_terms(eps, mu)
    ra, rb = _gauss_margins(eps, mu)
    lo = jnp.clip(a * (1 - ra) - b * (1 + rb), 0.0, 1.0)
    up = jnp.clip(a * (1 + ra) - b * (1 - rb), 0.0, 1.0)
    return lo, up


def _gauss_delta_bound(e, p):
    """The upper (``p[1]`` True) or lower bound on delta_G(e) of G_{p[0]}: one function, one trace."""
    lo, up = _gauss_delta_bounds(e, p[0])
    return jnp.where(p[1], up, lo)


def _gauss_eps_bounds(delta, mu):
    """(lower, upper) on eps_G(delta) >= 0 of G_mu (arrays), by root searches on the bounds of delta_G.

    Upper: the feasible end of the search on the upper bound of delta_G (a point where it is
    <= delta).  Lower: the infeasible end of the search on the lower bound (a point where it is
    > delta, or 0).  All problems run in one vmapped :func:`jaxdp.roots.find_root` (one loop to
    compile).  Both are constants for autodiff; see :func:`_implicit`.
    """
    delta, mu = jnp.broadcast_arrays(jax.lax.stop_gradient(delta), jax.lax.stop_gradient(mu))
    shape, n = delta.shape, delta.size
    d, m = jnp.tile(delta.ravel(), 2), jnp.tile(mu.ravel(), 2)
    upper = jnp.arange(2 * n) < n
    top = m * m / 2 + 45.0 * m + 1.0  # delta_G(top) < Phi(-45) ~ 1e-443: below any delta

    def one(d_, m_, u_, t_):
        return find_root(_gauss_delta_bound, d_, (m_, u_), decreasing=True, lower=0.0, upper=t_, lower_limit=0.0,
                         upper_limit=t_, rtol=1e-14, max_steps=200, method="bisection")

    r = jax.vmap(one)(d, m, upper, top)
    return r.other[n:].reshape(shape), r.x[:n].reshape(shape)


def _implicit(e, delta, mu):
    """``e`` (a root of delta_G(., mu) = delta, as a constant) with the implicit-function gradient."""
    e = jax.lax.stop_gradient(e)
    a, b = _cf.gaussian_delta_terms(e, mu)
    g = a - b - delta
    dg = jax.lax.stop_gradient(-b)
    dg = jnp.where(dg < 0, dg, -1.0)
    return e - (g - jax.lax.stop_gradient(g)) / dg


def _guard_problems(delta, s, q, t):
    """The Gaussian eps(delta; mu) problems of :func:`_eps_lower_guard`: its (deltas, mus), one step
    first, then m steps all sampled for a few m (the bound's best m grows with T)."""
    d, s, q, t = (jax.lax.stop_gradient(x) for x in (delta, s, q, t))
    cands = jnp.maximum(jnp.stack([t, jnp.floor(t**0.75), jnp.floor(t**0.5), jnp.floor(t**0.25)]), 1.0)
    log_ratio = jnp.log(d) - cands * jnp.log(q)
    deltas = jnp.concatenate([jnp.minimum(d / q, 1.0)[None], jnp.exp(jnp.minimum(log_ratio, 0.0))])
    return deltas, jnp.concatenate([(1.0 / s)[None], jnp.sqrt(cands) / s]), cands, log_ratio


def _eps_lower_guard(delta, s, q, t, e_lower):
    """Rigorous lower bound on the remove-direction eps_T(delta) (post-processing, see above).

    ``e_lower``: the lower ends of :func:`_gauss_eps_bounds` on :func:`_guard_problems` (the caller
    bisects them together with its own problems: one search loop to compile)."""
    _, _, cands, log_ratio = _guard_problems(delta, s, q, t)
    s, q = jax.lax.stop_gradient(s), jax.lax.stop_gradient(q)
    # one step, exact: eps_1 = log(1 - q + q e^{eps_G(delta / q; 1/s)})
    e1 = e_lower[0]
    # log(1 + q expm1(e1)) (not logaddexp of the two terms: that rounds e1 = 0 to 4e-17 > 0, above
    # an exact answer 0, and the guard then declared it a failure); in log form for large e1
    big = e1 > 30.0
    lb = jnp.where(big, jnp.logaddexp(jnp.log(jnp.where(q < 1.0, 1.0 - q, 1.0)), jnp.log(q) + e1),
                   jnp.log1p(q * jnp.expm1(jnp.minimum(e1, 30.0))))
    lb = jnp.where(q >= 1.0, e1, lb)
    # m steps all sampled: eps_G(delta / q^m; sqrt(m) / s) + m log q
    em = e_lower[1:]
    lbm = jnp.where(log_ratio < 0.0, em + cands * jnp.log(q), 0.0)
    lb = jnp.maximum(lb, jnp.max(lbm))
    return jnp.maximum(lb - _REL * jnp.abs(lb), 0.0)


def _delta_lower_guard(eps, s, q, t):
    """Rigorous lower bound on the remove-direction delta_T(eps) (post-processing, see above)."""
    e, s, q, t = (jax.lax.stop_gradient(x) for x in (eps, s, q, t))
    ep = jnp.maximum(e, 0.0)
    # one step: q delta_G(log(1 + (e^eps - 1)/q); 1/s), log(e^eps - (1 - q)) - log q in log form
    e1 = ep + jnp.log1p(-(1.0 - q) * jnp.exp(-ep)) - jnp.log(q)
    lb = q * _gauss_delta_bounds(jnp.maximum(e1, 0.0), 1.0 / s)[0]
    cands = jnp.maximum(jnp.stack([t, jnp.floor(t**0.75), jnp.floor(t**0.5), jnp.floor(t**0.25)]), 1.0)
    lbm = jnp.exp(cands * jnp.log(q)) * _gauss_delta_bounds(e - cands * jnp.log(q), jnp.sqrt(cands) / s)[0]
    lb = jnp.maximum(lb, jnp.max(lbm))
    return jnp.where(e >= 0.0, lb * (1 - _REL), 0.0)


def _curve_upper_guard(a, s, q, t, direction):
    """Rigorous upper bound on the T-step trade-off curve at ``a`` (post-processing, see above)."""
    s, q, t = (jax.lax.stop_gradient(x) for x in (s, q, t))
    cands = jnp.maximum(jnp.stack([t, jnp.floor(t**0.75), jnp.floor(t**0.5), jnp.floor(t**0.25), jnp.ones_like(t)]), 1.0)
    mus = (jnp.sqrt(cands) / s).reshape((-1,) + (1,) * a.ndim)
    g = _cf.gaussian_curve(a[None, ...], mus)
    g = jnp.minimum(g * (1 + _curve_margin(a[None, ...], mus)), 1.0)
    qm = jnp.exp(cands * jnp.log(q)).reshape((-1,) + (1,) * a.ndim)
    if direction == "add":
        # the add curve is the inverse of the remove curve, and inversion keeps the order:
        # f_add <= u^{-1} with u(a) = 1 - c (1 - G(a)), u^{-1}(b) = G((b - 1 + c) / c) for b > 1 - c
        # (G_mu is its own inverse) and no bound (1 - b) below
        arg = jnp.clip((a[None, ...] - (1.0 - qm)) / qm, 0.0, 1.0)
        gi = jnp.minimum(_cf.gaussian_curve(arg, mus) * (1 + _curve_margin(arg, mus)), 1.0)
        gi = jnp.where(a[None, ...] > 1.0 - qm, gi, 1.0 - a[None, ...])
        ub = jnp.min(gi, axis=0)
        return jnp.minimum(ub * (1 + _REL) + 1e-15, 1.0)
    ub = jnp.min(1.0 - qm * (1.0 - g), axis=0)
    g1 = _cf.gaussian_curve(a, 1.0 / s) * (1 + _curve_margin(a, 1.0 / s))
    ub = jnp.minimum(ub, q * g1 + (1.0 - q) * (1.0 - a))
    return jnp.minimum(ub * (1 + _REL) + 1e-15, 1.0)


def _curve_margin(a, mu):
    """Relative error allowance of :func:`jaxdp.closed_forms.gaussian_curve`: a few ulps of |Phi^-1(a)| + mu in the
    argument z, times the Mills ratio bound |z| + 2, plus Phi's own relative error."""
    zi = jnp.abs(_ndtri(jnp.clip(a, 1e-300, 1.0 - 2.0**-53)))
    return _REL + 8.0 * 2.0**-52 * (zi + mu + 1.0) * (zi + mu + 2.0)


@functools.partial(jit, static_argnames=("direction", "grid", "upper_only"))
def _eps_core(d, s, q, t, ok, direction, grid, upper_only=False):
    fn = lambda d_, s_, q_, t_: _eps_scalar(d_, s_, q_, t_, direction, grid, upper_only)  # noqa: E731
    d, s, q, t, ok = jnp.broadcast_arrays(d, s, q, t, ok)
    lo, up = broadcast_map(fn, _safe(d, ok, 1e-5), _safe(s, ok, 1.0), _safe(q, ok, 0.5), _safe(t, ok, 1.0))
    return nan_where_invalid(lo, ok), nan_where_invalid(up, ok)


@functools.partial(jit, static_argnames=("direction", "grid"))
def _delta_core(e, s, q, t, ok, direction, grid):
    fn = lambda e_, s_, q_, t_: _delta_scalar(e_, s_, q_, t_, direction, grid)  # noqa: E731
    e, s, q, t, ok = jnp.broadcast_arrays(e, s, q, t, ok)
    lo, up = broadcast_map(fn, _safe(e, ok, 1.0), _safe(s, ok, 1.0), _safe(q, ok, 0.5), _safe(t, ok, 1.0))
    return nan_where_invalid(lo, ok), nan_where_invalid(up, ok)


@functools.partial(jit, static_argnames=("direction", "grid", "num_eps"))
def _tradeoff_core(a, oka, s, q, t, ok, direction, grid, num_eps):
    s, q, t, ok = jnp.broadcast_arrays(s, q, t, ok)

    def fn(s_, q_, t_):
        return _tradeoff_scalar_params(a, s_, q_, t_, direction, grid, num_eps)

    lo, up = broadcast_map(fn, _safe(s, ok, 1.0), _safe(q, ok, 0.5), _safe(t, ok, 1.0))
    okb = ok.reshape(ok.shape + (1,) * a.ndim) & oka
    return nan_where_invalid(lo, okb), nan_where_invalid(up, okb)


def _eps_scalar(delta, sigma, q, steps, direction, grid, upper_only=False, ps=None):
    # ps: the composed PLDs when the caller shares them between conversions (see summary)
    ps = _plds(sigma, q, steps, direction, grid, delta) if ps is None else ps
    d_lo = _pld.lower_bound_delta(delta)  # lower ends robust at jumps of eps(delta)

    def conv(p):
        u = p.epsilon_upper(delta)
        return u, (u if upper_only else p.epsilon_lower(d_lo))

    ups, los = _pld.map_directions(conv, ps)
    # eps >= 0 by convention (delta(0) <= delta means the guarantee holds at eps = 0)
    up = jnp.maximum(jnp.max(ups), 0.0)
    # q = 1: the Gaussian with mu = sqrt(T) / sigma, in closed form (no discretisation, no float
    # floor: finite for any delta > 0)
    mu = jnp.sqrt(steps) / sigma
    # every closed-form search of this value in one vmapped root search: G_mu's upper eps at delta, its lower
    # eps at d_lo, and the lower guard's problems
    gd, gm, _, _ = _guard_problems(d_lo, sigma, q, steps)
    g_lo_all, g_hi_all = _gauss_eps_bounds(jnp.concatenate([jnp.stack([delta, d_lo]), gd]),
                                           jnp.concatenate([jnp.stack([mu, mu]), gm]))
    g_hi, g_lo = g_hi_all[0], g_lo_all[1]
    gauss = q >= 1.0
    up = jnp.where(gauss & (g_hi <= up), _implicit(g_hi, delta, mu), up)
    lb = _eps_lower_guard(d_lo, sigma, q, steps, g_lo_all[2:]) if direction != "add" else jnp.zeros_like(up)
    lb = jnp.where(gauss, jnp.maximum(lb, g_lo), lb)
    # a pessimistic value below a rigorous lower bound is a detected failure
    up = jnp.where(up < lb, jnp.inf, up)
    if upper_only:  # the plain entry point: skip the lower bound's conversion
        return up, up
    lo = jnp.maximum(jnp.max(los), 0.0)
    lo = jnp.minimum(jnp.maximum(lo, lb), up)
    return lo, up


def _delta_scalar(eps, sigma, q, steps, direction, grid, ps=None):
    ps = _plds(sigma, q, steps, direction, grid) if ps is None else ps
    ups, los = _pld.map_directions(lambda p: (p.delta_upper(eps), p.delta_lower(eps)), ps)
    up, lo = jnp.max(ups), jnp.max(los)
    mu = jnp.sqrt(steps) / sigma
    g_lo, g_hi = _gauss_delta_bounds(eps, mu)
    gauss = q >= 1.0
    up = jnp.where(gauss, jnp.minimum(up, g_hi), up)
    lb = _delta_lower_guard(eps, sigma, q, steps) if direction != "add" else jnp.zeros_like(up)
    lb = jnp.where(gauss, jnp.maximum(lb, g_lo), lb)
    up = jnp.where(up < lb, 1.0, up)
    lo = jnp.minimum(jnp.maximum(lo, lb), up)
    return lo, up


def _bracket(core, x, s, q, t, ok, direction, grid, accuracy, upper_only=False):
    """``core``'s certified (lower, upper) at a fixed ``grid``, or on the grids that ``accuracy``
    asks for (:func:`jaxdp.core.accuracy.refine`; traced arguments: its first rung, no refinement).
    ``upper_only``: the caller returns the upper end only, so where no width is checked (a fixed
    grid, traced arguments) the lower end's conversion is skipped (``lower`` is then ``upper``)."""
    kw = dict(upper_only=True) if upper_only else {}
    if grid is not None:
        return core(x, s, q, t, ok, direction, grid, **kw)
    if any(is_traced(v) for v in (x, s, q, t, ok)):
        return core(x, s, q, t, ok, direction, _acc.LADDER[_acc.first_rung(accuracy)], **kw)
    # concrete input reached here only if valid (check() raised otherwise)
    # (traced once per machine: the persistent cache keeps the trace beside the compiled program)
    lo, up = _acc.refine(lambda g, *a: _tracecache.call(core, (*a, np.ones(np.shape(a[0]), bool)), direction=direction, grid=g),
                         (x, s, q, t), accuracy)
    return jnp.asarray(lo), jnp.asarray(up)




def epsilon_for_delta_bracket(
    delta, *, noise_multiplier, sampling_probability, num_steps, direction="both", neighboring="add_remove", grid=None, accuracy=None
) -> Bracket:
    """Certified bracket on eps(delta); ``.value`` = ``.upper``."""
    grid, accuracy = _acc.resolve(grid, accuracy)
    _check_adjacency(neighboring, direction, noise_multiplier, sampling_probability)
    check_broadcast(delta=delta, noise_multiplier=noise_multiplier, sampling_probability=sampling_probability, num_steps=num_steps)
    d, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    lo, up = _bracket(_eps_core, d, s, q, t, ok & okd, direction, grid, accuracy)
    return Bracket(lower=lo, upper=up, value=up)


def epsilon_for_delta(delta, *, noise_multiplier, sampling_probability, num_steps, direction="both", neighboring="add_remove", grid=None, accuracy=None):
    r"""Certified upper bound on :math:`\varepsilon(\delta)` after ``num_steps`` Poisson-subsampled Gaussian steps.

    Example::

        >>> float(epsilon_for_delta(1e-5, noise_multiplier=1.0, sampling_probability=0.01, num_steps=1000))  # doctest: +ELLIPSIS
        1.828...
    """
    grid, accuracy = _acc.resolve(grid, accuracy)
    _check_adjacency(neighboring, direction, noise_multiplier, sampling_probability)
    check_broadcast(delta=delta, noise_multiplier=noise_multiplier, sampling_probability=sampling_probability, num_steps=num_steps)
    d, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    return _bracket(_eps_core, d, s, q, t, ok & okd, direction, grid, accuracy, upper_only=True)[1]


def delta_for_epsilon_bracket(
    epsilon, *, noise_multiplier, sampling_probability, num_steps, direction="both", neighboring="add_remove", grid=None, accuracy=None
) -> Bracket:
    """Certified bracket on the hockey-stick delta(eps); ``.value`` = ``.upper``."""
    grid, accuracy = _acc.resolve(grid, accuracy)
    _check_adjacency(neighboring, direction, noise_multiplier, sampling_probability)
    check_broadcast(epsilon=epsilon, noise_multiplier=noise_multiplier, sampling_probability=sampling_probability, num_steps=num_steps)
    e, oke = check("epsilon", epsilon)
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    lo, up = _bracket(_delta_core, e, s, q, t, ok & oke, direction, grid, accuracy)
    return Bracket(lower=lo, upper=up, value=up)


def delta_for_epsilon(epsilon, *, noise_multiplier, sampling_probability, num_steps, direction="both", neighboring="add_remove", grid=None, accuracy=None):
    r"""Certified upper bound on the hockey-stick :math:`\delta(\varepsilon)` (worse direction by default)."""
    return delta_for_epsilon_bracket(
        epsilon, noise_multiplier=noise_multiplier, sampling_probability=sampling_probability,
        num_steps=num_steps, direction=direction, neighboring=neighboring, grid=grid, accuracy=accuracy,
    ).upper


for _f in (epsilon_for_delta_bracket, epsilon_for_delta, delta_for_epsilon_bracket, delta_for_epsilon):
    _acc.document(_f)
del _f


def _tradeoff_scalar_params(a, sigma, q, steps, direction, grid, num_eps, ps=None):
    lo_curve, up_curve = _tradeoff_pld(a, sigma, q, steps, direction, grid, num_eps, ps)
    # q = 1: the Gaussian curve G_mu, mu = sqrt(T) / sigma (both directions)
    mu = jnp.sqrt(steps) / sigma
    g = _cf.gaussian_curve(a, mu)
    rg = _curve_margin(a, mu)
    gauss = q >= 1.0
    lo_curve = jnp.where(gauss, jnp.maximum(lo_curve, g * (1 - rg) - 1e-300), lo_curve)
    up_curve = jnp.where(gauss, jnp.minimum(up_curve, jnp.minimum(g * (1 + rg) + 1e-300, 1.0 - a)), up_curve)
    # a lower curve above a rigorous upper bound anywhere is a detected failure: trivial curve
    ub = _curve_upper_guard(a, sigma, q, steps, direction)
    bad = jnp.any(lo_curve > ub)
    lo_curve = jnp.where(bad, 0.0, lo_curve)
    up_curve = jnp.minimum(jnp.maximum(up_curve, lo_curve), jnp.maximum(ub, lo_curve))
    return lo_curve, up_curve


def _tradeoff_pld(a, sigma, q, steps, direction, grid, num_eps, ps=None):
    ps = _plds(sigma, q, steps, direction, grid) if ps is None else ps
    if direction != "both":
        return tuple(x[0] for x in _pld.map_directions(lambda p: (p.tradeoff_lower(a), p.tradeoff_upper(a)), ps))
    # both directions: a curve valid for every ordered pair of neighbours is conv(min(f_r, f_a)),
    # whose profile is max(delta_r, delta_a); the sup over a finite eps grid keeps it a lower bound.
    hi = jnp.max(_pld.map_directions(lambda p: p.losses[-1], ps))
    eps = jnp.concatenate([-jnp.geomspace(1e-6, 1.0, num_eps // 4)[::-1] * hi, jnp.linspace(0.0, 1.0, num_eps - num_eps // 4) * hi])
    profs, ups = _pld.map_directions(lambda p: (p.delta_upper(eps), p.tradeoff_upper(a)), ps)
    prof = jnp.max(profs, axis=0)
    # (the pointwise min(f_r, f_a) is also a valid bound but not convex, i.e. not a trade-off
    # function; the property suite found a point where it lies 3.7e-3 above a chord)
    lo_curve = _tf.curve_from_profile(prof, eps, a)
    return lo_curve, jnp.min(ups, axis=0)


def tradeoff_bracket(a, *, noise_multiplier, sampling_probability, num_steps, direction="both", neighboring="add_remove", grid=_pld.DEFAULT_GRID, num_eps: int = 4096):
    """Bracket on the trade-off curve at type I errors ``a`` (any shape); ``.value`` = lower bound."""
    _check_adjacency(neighboring, direction, noise_multiplier, sampling_probability)
    a, oka = check("a", a, lo=0.0, hi=1.0)
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    lo, up = _tradeoff_core(a, oka, s, q, t, ok, direction, grid, num_eps)
    return Bracket(lower=lo, upper=up, value=lo)


def tradeoff(a, *, noise_multiplier, sampling_probability, num_steps, direction="both", neighboring="add_remove", grid=_pld.DEFAULT_GRID):
    r"""Certified lower bound on the trade-off curve :math:`f(a)` (a sound f-DP guarantee).

    With array parameters the result has shape ``params.shape + a.shape``.
    ``direction="remove"`` gives T(M(D'), M(D)) for D' = D minus one example, ``"add"`` the
    reverse pair, ``"both"`` a curve valid for every ordered pair (convex hull of their minimum).
    """
    return tradeoff_bracket(
        a, noise_multiplier=noise_multiplier, sampling_probability=sampling_probability,
        num_steps=num_steps, direction=direction, neighboring=neighboring, grid=grid,
    ).lower


@functools.partial(jit, static_argnames=("direction", "grid", "num_eps"))
def _summary_core(d, e, a, s, q, t, direction, grid, num_eps):
    ps = _plds(s, q, t, direction, grid)
    # lax.map, not vmap: the conversions' root searches are traced once as scalars (batching their
    # loops cost ~0.15 s of a cold command's tracing), and they are cheap to run in sequence
    eps = jax.lax.map(lambda d_: _eps_scalar(d_, s, q, t, direction, grid, ps=ps), d)
    # no epsilons: the delta(eps) conversion is not compiled at all
    dlt = jax.lax.map(lambda e_: _delta_scalar(e_, s, q, t, direction, grid, ps=ps), e) if e.size else (e, e)
    crv = _tradeoff_scalar_params(a, s, q, t, direction, grid, num_eps, ps=ps)
    return eps, dlt, crv


def summary(delta, epsilon, a, *, noise_multiplier, sampling_probability, num_steps, direction="both",
            neighboring="add_remove", grid=_pld.DEFAULT_GRID, num_eps: int = 4096):
    """Certified brackets on eps(delta), delta(eps) and the trade-off curve f(a) of **one**
    configuration, all converted from one composed PLD per direction (one FFT composition, one
    program to compile, where the three entry points compose once each).

    ``delta``, ``epsilon`` and ``a``: 1-d arrays (``epsilon`` may be empty: nothing is computed for
    it); the parameters are scalars.  Returns ``dict(epsilon=Bracket, delta=Bracket,
    tradeoff=Bracket)``, each as the entry point of that name returns it at the same ``grid``
    (``epsilon_for_delta_bracket`` composes its PLD with tails placed for its delta on a two-stage
    grid; here the PLD is shared, so on such grids the eps brackets can be wider, never less sound).
    """
    _check_adjacency(neighboring, direction, noise_multiplier, sampling_probability)
    for name, v in (("noise_multiplier", noise_multiplier), ("sampling_probability", sampling_probability), ("num_steps", num_steps)):
        if np.ndim(v) != 0:
            raise ValueError(f"{name} must be a scalar in summary(), got shape {np.shape(v)}")
    d, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    if not is_traced(epsilon) and np.size(epsilon) == 0:
        e, oke = jnp.zeros((0,)), jnp.zeros((0,), bool)
    else:
        e, oke = check("epsilon", epsilon)
    a, oka = check("a", a, lo=0.0, hi=1.0)
    for name, v in (("delta", d), ("epsilon", e), ("a", a)):
        if v.ndim != 1:
            raise ValueError(f"{name} must be a 1-d array in summary(), got shape {v.shape}")
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    (el, eu), (dl, du), (fl, fu) = _summary_core(_safe(d, okd, 1e-5), _safe(e, oke, 1.0), _safe(a, oka, 0.5), _safe(s, ok, 1.0),
                                                 _safe(q, ok, 0.5), _safe(t, ok, 1.0), direction, grid, num_eps)
    el, eu = (nan_where_invalid(x, ok & okd) for x in (el, eu))
    dl, du = (nan_where_invalid(x, ok & oke) for x in (dl, du))
    fl, fu = (nan_where_invalid(x, ok & oka) for x in (fl, fu))
    return dict(epsilon=Bracket(lower=el, upper=eu, value=eu), delta=Bracket(lower=dl, upper=du, value=du),
                tradeoff=Bracket(lower=fl, upper=fu, value=fl))


# ------------------------------------------------------------------------------------------------
# CLT approximations (approximations, not bounds)
# ------------------------------------------------------------------------------------------------


def mu_clt_bu(*, noise_multiplier, sampling_probability, num_steps):
    r"""Bu, Dong, Long & Su (2020) CLT: :math:`\mu = q\sqrt{T(e^{1/\sigma^2} - 1)}` (an approximation)."""
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    return nan_where_invalid(_cf.poisson_clt_mu(s, q, t), ok)


def mu_clt_dong_roth_su(*, noise_multiplier, sampling_probability, num_steps):
    r"""Dong, Roth & Su (2022) CLT: :math:`\mu = \sqrt{2}\, q\sqrt{T}\sqrt{e^{1/\sigma^2}\Phi(1.5/\sigma) + 3\Phi(-0.5/\sigma) - 2}`."""
    s, q, t, ok = _validate(noise_multiplier, sampling_probability, num_steps)
    return nan_where_invalid(_cf.drs_clt_mu(s, q, t), ok)


__all__ = [
    "ADJACENCY",
    "Bracket",
    "epsilon_for_delta",
    "epsilon_for_delta_bracket",
    "delta_for_epsilon",
    "delta_for_epsilon_bracket",
    "tradeoff",
    "tradeoff_bracket",
    "summary",
    "mu_clt_bu",
    "mu_clt_dong_roth_su",
]
