r"""Calibration: the parameter on the feasible side of a privacy target, with implicit gradients.

One generic solver, :func:`solve`, and thin wrappers around it.

Given a jaxdp function :math:`g(x, \theta)` monotone in a scalar :math:`x` (a noise multiplier, a
number of rounds, a number of epochs, a noise scale) and a target :math:`\tau` (an epsilon at a
delta, a delta gap, a GDP :math:`\mu`, an RPP epsilon), :func:`solve` returns the **feasible**
:math:`x^\star` closest to the root of :math:`g(x, \theta) = \tau`:

* :math:`g` non-increasing in x (``decreasing=True``; more noise, less leakage): the smallest x with
  :math:`g(x) \le \tau`;
* :math:`g` non-decreasing (``decreasing=False``; more epochs, more leakage): the largest such x.

Method: :func:`jaxdp.roots.find_root`, jaxdp's one root finder (bracket expansion, then
Chandrupatla's bracketed inverse quadratic interpolation, in one ``lax.while_loop``, so it runs
under ``jit`` and ``vmap``).  The returned x is the end of the final bracket at which
:math:`g \le \tau` was *evaluated*: a failed or unconverged solve never returns a point on the
infeasible side.  Integer quantities (rounds M, samples N, epochs E, steps T) are searched on
integers, so the answer is the extreme feasible integer (rounding toward feasibility).

Gradients come from the implicit-function theorem at the solution, not from the iterations:

.. math::

   \frac{\partial x^\star}{\partial \theta} = -\frac{\partial_\theta g(x^\star, \theta)}{\partial_x g(x^\star, \theta)},
   \qquad \frac{\partial x^\star}{\partial \tau} = \frac{1}{\partial_x g(x^\star, \theta)} .

Failure is never an optimistic number.  :class:`Solution` carries a ``result`` code
(:data:`RESULTS`); with ``throw=True`` (default) a failed eager solve raises
:class:`CalibrationError`; under ``jit`` (or with ``throw=False``) the value is NaN wherever the
target is infeasible in the allowed range or an input/evaluation was invalid.

Stable entry points: :func:`noise_multiplier` and :func:`rounds`.

"""

from __future__ import annotations

import functools
import importlib
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ._config import jit
from . import _config  # noqa: F401  (float64: deltas of 1e-10, roots to 1e-10 relative)
from . import closed_forms as _cf
from .accountant import account
from ._validate import check, check_broadcast, check_choice, is_traced
from .core import pld as _pld
from ._pytree import pytree_dataclass
from .mechanisms.shuffled import SIGMA_MIN
from .roots import (AT_LIMIT, INFEASIBLE, MAX_STEPS, NONFINITE, RESULTS, SUCCESSFUL, extreme_integer, find_root,
                    implicit)
from .shuffle.closed_form import log_regime_rounds

# Default calibration grid for the PLD accountants: certified like every grid, ~10x cheaper than
# the accountant's default; its epsilon is pessimistic by ~1e-4 relative (sigma by less), which
# also keeps the answer feasible for dp_accounting's slightly less pessimistic PLD.
CALIBRATION_GRID = _pld.Grid(size=2**15)


class CalibrationError(ValueError):
    """A calibration could not return a feasible value (infeasible target, invalid input, no convergence)."""


@pytree_dataclass
class Solution:
    """Result of :func:`solve`.

    value: the calibrated x on the feasible side (an integer value for integer problems); NaN when
        ``result`` is INFEASIBLE or NONFINITE.  Differentiable by the implicit-function theorem
        (real problems; integer values have zero derivative).
    root: the real-valued feasible end of the final bracket (for integer problems solved on the
        reals, e.g. shuffle rounds, the real root before rounding); differentiable.
    result: int32 code, see :data:`RESULTS`.
    stats: dict with ``num_steps`` (iterations), ``num_expand`` (bracket expansions),
        ``infeasible_end`` (the other end of the final bracket, x units) and ``residual``
        (g(value) - target <= 0).
    """

    value: jax.Array
    root: jax.Array
    result: jax.Array
    stats: dict

    def message(self) -> str:
        r = np.asarray(self.result)
        codes = sorted(set(int(c) for c in r.ravel()))
        return "; ".join(RESULTS[c] for c in codes)


# ------------------------------------------------------------------------------------------------
# the solver: jaxdp.roots.find_root, certified against the public accountant, implicit gradients
# ------------------------------------------------------------------------------------------------


def _solve_traced(fn, target, params, lower, upper, *, decreasing, lower_limit, upper_limit, log_scale,
                  integer, rtol, atol, max_steps, max_expand, growth, certify_fn=None, certify_margin=0.0,
                  report_limit=False):
    """Solve, then (``certify_fn``) re-check the answer with the function it must be feasible for.

    ``certify_fn``: the public accountant at the grid the user checks with, when the search ran on a
    cheaper grid.  It is evaluated once at the search's answer; if that answer fails it, a second
    solve of ``certify_fn <= target`` runs from the answer toward the safe side (its range starts at
    the answer), so the value returned always satisfies ``certify_fn``, or is NaN with the code of
    the failure.  Implicit gradients use ``fn`` (the search function) at the returned value.
    ``certify_margin``: the certificate asks ``certify_fn <= target (1 - certify_margin)``, so that
    float-level differences between the traced evaluation here and the user's own call (the PLD
    accountant's number moves by ~1e-5 relative with the batch shape it is called with) cannot put
    the returned value on the infeasible side of the user's check.
    ``report_limit``: a feasible range limit is not a domain edge here (e.g. sigma_range[0]): give
    the code AT_LIMIT instead of SUCCESSFUL.
    """
    sg = jax.lax.stop_gradient
    kw = dict(log_scale=log_scale, integer=integer, rtol=rtol, atol=atol, max_steps=max_steps,
              max_expand=max_expand, growth=growth)
    r = find_root(fn, target, params, lower=lower, upper=upper, decreasing=decreasing,
                  lower_limit=lower_limit, upper_limit=upper_limit, **kw)
    x, x_oth, result, res, at_limit = r.x, r.other, r.result, r.residual, r.at_limit
    stats = dict(num_steps=r.num_steps, num_expand=r.num_expand, infeasible_end=x_oth, residual=res)
    if certify_fn is not None:
        xs = sg(x)  # NaN where the search failed: the certificate stops at its first evaluation
        if decreasing:
            c_lo, c_hi, lo_, hi_ = xs, upper_limit, xs, (xs + 1.0 if integer else xs * (1.0 + 1e-3))
        else:
            c_lo, c_hi, lo_, hi_ = lower_limit, xs, (xs - 1.0 if integer else xs * (1.0 - 1e-3)), xs
        # the certificate's own solve stops at 1e-7 relative: its grid is the expensive one, and the
        # discretised eps has kinks that slow the last digits, far below the bracket width of eps
        kwc = dict(kw, rtol=max(rtol, 1e-7))
        c = find_root(certify_fn, sg(target) * (1.0 - certify_margin), params, lower=lo_, upper=hi_,
                      decreasing=decreasing, lower_limit=c_lo, upper_limit=c_hi, **kwc)
        xc, xc_oth, rc, n_itc, n_expc, resc, passed = (c.x, c.other, c.result, c.num_steps, c.num_expand,
                                                      c.residual, c.at_limit)
        searched = (result == SUCCESSFUL) | (result == MAX_STEPS)
        # passed: the certificate's first evaluation, at the answer itself, was feasible
        moved = searched & ~passed
        result = jnp.where(searched, jnp.where(rc == SUCCESSFUL, result, rc), result).astype(jnp.int32)
        x = jnp.where(moved, xc, x)
        # an answer the certificate moved is no longer held at the search's range limit
        at_limit = at_limit & ~moved
        stats = dict(stats, infeasible_end=jnp.where(moved, xc_oth, x_oth), residual=jnp.where(searched, resc, res),
                     certificate_steps=n_itc + n_expc + 1, certificate_moved=moved)
    good = (result == SUCCESSFUL) | (result == MAX_STEPS)
    if report_limit:
        result = jnp.where(good & at_limit, AT_LIMIT, result).astype(jnp.int32)
    stats["at_limit"] = at_limit
    if integer:
        value = x
        root = x
    else:
        value = implicit(fn, x, at_limit, jnp.asarray(target, jnp.float64), params)
        root = value
    return Solution(value=value, root=root, result=result, stats=stats)


def _raise_if_failed(sol: Solution, throw: bool, what: str = "calibration"):
    if not throw or is_traced(sol.result):
        return sol
    r = np.asarray(sol.result)
    bad = r != SUCCESSFUL
    if bad.any():
        raise CalibrationError(f"{what} failed: {sol.message()} (result codes {sorted(set(r[bad].ravel().tolist()))})")
    return sol


def solve(
    fn: Callable[[jax.Array, Any], jax.Array],
    target,
    params: Any = None,
    *,
    decreasing: bool,
    lower,
    upper,
    lower_limit: float = -math.inf,
    upper_limit: float = math.inf,
    log_scale: bool = False,
    integer: bool = False,
    rtol: float = 1e-10,
    atol: float = 0.0,
    max_steps: int = 100,
    max_expand: int = 64,
    growth: float = 2.0,
    throw: bool = True,
) -> Solution:
    r"""Feasible-side root of ``fn(x, params) <= target`` for ``fn`` monotone in scalar ``x``.

    Args:
      fn: ``fn(x, params) -> scalar``, jax-traceable and monotone in x; differentiable in x and
        params for gradients.
      target: scalar target :math:`\tau` (differentiable).
      params: pytree of parameters (differentiable).
      decreasing: True if fn is non-increasing in x: returns the smallest x with
        :math:`g(x) \le \tau`; False: the largest.
      lower, upper: initial bracket guess (expanded by ``growth`` as needed, at most
        ``max_expand`` times, within ``[lower_limit, upper_limit]``).
      log_scale: search in log x (positive quantities: noise multipliers, counts, scales).
      integer: trial points are integers; the answer is the extreme feasible integer.
      rtol, atol: stop when the bracket is narrower than ``atol + rtol |x|``.
      throw: raise :class:`CalibrationError` on failure when called eagerly.  Under ``jit`` the
        value is NaN where the result is INFEASIBLE or NONFINITE.

    Returns:
      :class:`Solution`.  Scalar problems only: use :func:`jax.vmap` for batches of targets and
      parameters.  If the whole range is feasible, the limit is returned with result SUCCESSFUL.

    Example:
      >>> import jax.numpy as jnp
      >>> sol = solve(lambda x, p: p / x, 2.0, 3.0, decreasing=True, lower=0.1, upper=1.0,
      ...             lower_limit=1e-6, upper_limit=1e6, log_scale=True)
      >>> round(float(sol.value), 9)
      1.5
    """
    sol = _solve_traced(fn, target, params, lower, upper, decreasing=decreasing, lower_limit=lower_limit,
                        upper_limit=upper_limit, log_scale=log_scale, integer=integer, rtol=rtol, atol=atol,
                        max_steps=max_steps, max_expand=max_expand, growth=growth)
    return _raise_if_failed(sol, throw)


# An integer counts as feasible only with this margin (relative to the target): at the boundary two
# compilations of the same accountant differ in the last digits, and the integer returned must be
# feasible by the public function's own number too.
_INT_MARGIN = 1e-13


# ------------------------------------------------------------------------------------------------
# helpers for wrappers: broadcast, flatten, vmap a scalar solve
# ------------------------------------------------------------------------------------------------


def _batched(one, *args):
    arrs = jnp.broadcast_arrays(*[jnp.asarray(a, jnp.float64) for a in args])
    shape = arrs[0].shape
    flat = [a.reshape(-1) for a in arrs]
    out = jax.vmap(one)(*flat)
    return jax.tree_util.tree_map(lambda o: o.reshape(shape + o.shape[1:]), out)


def _finalize(sol, ok, throw, what):
    """NaN where an input was invalid (traced path) and the NONFINITE code there."""
    bad = ~ok
    sol = Solution(
        value=jnp.where(bad, jnp.nan, sol.value),
        root=jnp.where(bad, jnp.nan, sol.root),
        result=jnp.where(bad, NONFINITE, sol.result).astype(jnp.int32),
        stats=sol.stats,
    )
    return _raise_if_failed(sol, throw, what)


_SIGMA_LIMITS = (1e-2, 1e4)


# ------------------------------------------------------------------------------------------------
# rigorous lower bounds: a cheap consistency guard on every accountant number the solver reads
# ------------------------------------------------------------------------------------------------
#
# An accountant's eps (or gap) is an upper bound on the truth, so it can never lie below a rigorous
# lower bound on the truth.  Where it does, that number is provably unsound (an overflowed tail, a
# law that was not resolved, a failure read as 0) and the solver must not read it as "feasible":
# the guarded function returns +inf there (the infeasible side), so the search moves to parameters
# where the accountant is consistent, or ends INFEASIBLE.  The bounds are tests on a statistic of
# the output (post-processing), so each is valid for the whole composition.

_K_GRID = np.unique(np.round(np.geomspace(1.0, 1e7, 96))).astype(np.float64)
_Z_GRID = np.linspace(-8.0, 4.0, 49)


def _log_sub(la, lb):
    """log(e^la - e^lb) for la > lb (-inf otherwise)."""
    d = jnp.minimum(lb - la, 0.0)
    return jnp.where(lb < la, la + jnp.log(-jnp.expm1(d)), -jnp.inf)


def _poisson_remove_delta_lower(eps, sigma, q, steps):
    r"""Rigorous lower bound on the T-step remove-direction hockey-stick divergence at ``eps``.

    Test: "at least k of the T outputs exceed c" (a post-processing of the T outputs).  Under the
    pair with the example each output exceeds c independently with probability
    p1 = (1 - q) Phi(-c/s) + q Phi((1 - c)/s), without it p0 = Phi(-c/s), so
    delta_T(eps) >= P[Bin(T, p1) >= k] - e^eps P[Bin(T, p0) >= k]
                 >= pmf(k; T, p1) - e^eps exp(-T KL(k/T || p0))       (Chernoff, k/T >= p0),
    maximised over a fixed grid of thresholds c = 1 + s z and counts k <= T.  In the log domain,
    so it stays meaningful where e^eps overflows (eps in the thousands, tiny sigma).
    """
    from jax.scipy.special import gammaln, log_ndtr

    sg = jax.lax.stop_gradient
    eps, sigma, q, steps = sg(eps), sg(sigma), sg(q), sg(steps)
    z = jnp.asarray(_Z_GRID)[:, None]
    k = jnp.asarray(_K_GRID)[None, :]
    c = 1.0 + sigma * z
    lp0, l1p0 = log_ndtr(-c / sigma), log_ndtr(c / sigma)
    l1mq = jnp.log1p(-jnp.minimum(q, 1.0))
    lq = jnp.log(q)
    lp1 = jnp.logaddexp(l1mq + lp0, lq + log_ndtr((1.0 - c) / sigma))
    l1p1 = jnp.logaddexp(l1mq + l1p0, lq + log_ndtr((c - 1.0) / sigma))
    kk = jnp.minimum(k, steps)
    lchoose = gammaln(steps + 1.0) - gammaln(kk + 1.0) - gammaln(steps - kk + 1.0)
    l_pmf1 = lchoose + kk * lp1 + (steps - kk) * l1p1
    a = kk / steps
    # T KL(a || p0) = k (log a - log p0) + (T - k) (log(1 - a) - log(1 - p0)); its (T - k) term is 0 at k = T
    tkl = kk * (jnp.log(a) - lp0) + jnp.where(kk < steps, (steps - kk) * (jnp.log1p(-jnp.minimum(a, 1.0 - 1e-16)) - l1p0), 0.0)
    l_tail0 = jnp.where(a >= jnp.exp(lp0), -tkl, 0.0)
    ld = _log_sub(l_pmf1, eps + l_tail0)
    return jnp.exp(jnp.max(ld))


def _gaussian_delta_lower(eps, mu):
    """delta(eps) of G_mu (Dong, Roth & Su 2022, Cor. 2.13), in the log domain (eps may be large)."""
    return jnp.exp(_log_sub(*_cf.gaussian_log_delta_terms(eps, mu)))


def _consistent_eps(eps_acc, delta, delta_lower):
    """eps_acc >= the truth's lower bound  <=>  the lower bound on delta at eps_acc is <= delta.

    The 1e-6 relative slack covers the float error of the bound (gammaln of 1e7, log_ndtr); the
    guard only has to catch gross failures (the 709-overflow class), not 1e-6 effects.
    """
    sg = jax.lax.stop_gradient
    return jnp.isnan(eps_acc) | (delta_lower <= sg(delta) * (1.0 + 1e-6))


def _guard(value, consistent):
    """+inf (infeasible) where the accountant's number is provably below the truth; NaN stays NaN."""
    return jnp.where(consistent, value, jnp.inf)


def _shuffle_mu_linear(sigma, m, epochs):
    """mu of the linear test on the sum of each epoch's coordinates: f <= G_{sqrt(E) / (sigma sqrt(M))}."""
    return jnp.sqrt(epochs) / (sigma * jnp.sqrt(m))


def _shuffle_gap_lower(sigma, m, epochs):
    """Linear-test lower bound on the E-epoch shuffled gap: 2 Phi(mu / 2) - 1 (shuffle spec, section 2)."""
    sg = jax.lax.stop_gradient
    return _cf.gaussian_tv(_shuffle_mu_linear(sg(sigma), sg(m), sg(epochs)))


# ------------------------------------------------------------------------------------------------
# Poisson: noise multiplier and epochs
# ------------------------------------------------------------------------------------------------


def _poisson_eps(direction, grid):
    """The public accountant's eps (same function, same grid policy), guarded by a rigorous lower bound."""
    from . import poisson

    def fn(sigma, p):
        delta, q, steps = p
        eps = poisson.epsilon_for_delta(delta, noise_multiplier=sigma, sampling_probability=q,
                                        num_steps=steps, direction=direction, grid=grid)
        return _poisson_guarded(eps, sigma, delta, q, steps, direction)

    return fn


def _poisson_guarded(eps, sigma, delta, q, steps, direction):
    """+inf where the accountant's eps is provably below the truth (scalar arguments)."""
    if direction == "add":  # the lower bound is the remove direction's (the add eps is <= T log(1/(1-q)))
        return eps
    return _guard(eps, _consistent_eps(eps, delta, _poisson_remove_delta_lower(eps, sigma, q, steps)))


def _search_grid(grid, search_grid):
    """The grid the search runs on: ``search_grid``, or the cheaper CALIBRATION_GRID when ``grid`` is larger.

    Only a search accelerator: the answer is then certified by the public accountant on ``grid``
    itself (one evaluation, more only if the answer must move), so the policy that decides
    feasibility is exactly the one of ``jaxdp.poisson.epsilon_for_delta(..., grid=grid)``.
    """
    if search_grid is not None:
        return search_grid
    return CALIBRATION_GRID if grid.size > CALIBRATION_GRID.size else grid


# relative margin of the certificate: 10x the batch-shape dependence of the default-grid eps seen at
# issue 20's class-7 point (a vmapped and a scalar call differed by 7.5e-6 relative there)
_CERTIFY_MARGIN = 1e-4


def _certifier(direction, grid, search):
    return None if search == grid else _poisson_eps(direction, grid)


_OPTS = ("rtol", "max_steps", "direction", "grid", "search_grid", "sigma_range")


def _poisson_sigma_guess(eps, delta, q, steps):
    """Starting point only (the solve is certified): the sigma whose Bu et al. CLT mu meets (eps, delta)."""
    sg = jax.lax.stop_gradient
    eps, delta, q, steps = sg(eps), sg(delta), sg(q), sg(steps)
    mu = find_root(lambda m, p: _cf.gaussian_delta(p[0], m), delta, (eps,), lower=0.5, upper=2.0, decreasing=False,
                   lower_limit=1e-4, upper_limit=100.0, log_scale=True, rtol=1e-6, max_steps=60, max_expand=40).x
    s0 = 1.0 / jnp.sqrt(jnp.log1p(mu**2 / (q**2 * steps)))
    return jnp.clip(jnp.where(jnp.isfinite(s0), s0, 1.0), 0.05, 1e3)


@functools.partial(jit, static_argnames=_OPTS)
def _poisson_sigma_core(eps, delta, q, steps, *, rtol, max_steps, direction, grid, search_grid, sigma_range):
    fn = _poisson_eps(direction, search_grid)
    cert = _certifier(direction, grid, search_grid)

    def one(e, d, q_, t_):
        s0 = _poisson_sigma_guess(e, d, q_, t_)
        return _solve_traced(fn, e, (d, q_, t_), s0 / 1.25, s0 * 1.25, decreasing=True, lower_limit=sigma_range[0],
                             upper_limit=sigma_range[1], log_scale=True, integer=False, rtol=rtol, atol=0.0,
                             max_steps=max_steps, max_expand=64, growth=2.0, certify_fn=cert,
                             certify_margin=_CERTIFY_MARGIN, report_limit=True)

    return _batched(one, eps, delta, q, steps)


def poisson_noise_multiplier(epsilon, delta, *, sampling_probability, num_steps, direction="both",
                             grid=_pld.DEFAULT_GRID, rtol=1e-10, max_steps=100, sigma_range=_SIGMA_LIMITS,
                             throw=True, search_grid=None) -> Solution:
    r"""Smallest noise multiplier with certified :math:`\varepsilon(\delta) \le` ``epsilon`` (Poisson DP-SGD).

    Solves ``jaxdp.poisson.epsilon_for_delta(delta, noise_multiplier=sigma, ..., grid=grid) <= epsilon``
    over sigma in ``sigma_range``: the returned sigma is feasible by the public accountant's own
    number at ``grid`` (default: the accountant's default grid).  The search runs on ``search_grid``
    (default: :data:`CALIBRATION_GRID` when ``grid`` is larger, else ``grid``) and its answer is
    then certified on ``grid``, moving up if it fails there.  Every accountant number read is
    checked against a rigorous lower bound (a test on the T outputs); a provably low number counts
    as infeasible.  A feasible ``sigma_range[0]`` gives the code AT_LIMIT (raised eagerly).
    Broadcasts over all numeric arguments; jit/vmap-able; gradients in ``epsilon``, ``delta`` and
    ``sampling_probability`` by the implicit-function theorem (of the search-grid eps).

    Example:
      >>> sol = poisson_noise_multiplier(1.0, 1e-5, sampling_probability=0.01, num_steps=1000)
      >>> round(float(sol.value), 3)
      1.415
    """
    check_choice("direction", direction, ("both", "remove", "add"))
    e, oke = check("epsilon", epsilon, lo=0.0, lo_open=True)
    d, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    q, okq = check("sampling_probability", sampling_probability, lo=0.0, hi=1.0, lo_open=True)
    t, okt = check("num_steps", num_steps, lo=1.0, integer=True)
    shape = check_broadcast(epsilon=e, delta=d, sampling_probability=q, num_steps=t)
    ok = jnp.broadcast_to(oke & okd & okq & okt, shape)
    args = (jnp.where(oke, e, 1.0), jnp.where(okd, d, 1e-5), jnp.where(okq, q, 0.5), jnp.where(okt, t, 1.0))
    kw = dict(rtol=rtol, max_steps=max_steps, direction=direction, sigma_range=tuple(sigma_range))
    sol = _poisson_sigma_core(*args, grid=grid, search_grid=_search_grid(grid, search_grid), **kw)
    return _finalize(sol, ok, throw, "poisson noise_multiplier calibration")


@functools.partial(jit, static_argnames=("direction", "grid", "search_grid", "max_epochs"))
def _poisson_epochs_core(eps, delta, sigma, q, spe, *, direction, grid, search_grid, max_epochs):
    def in_epochs(fn0):
        if fn0 is None:
            return None

        def fn(epochs, p):
            d, s, q_, spe_ = p
            return fn0(s, (d, q_, epochs * spe_))
        return fn

    fn = in_epochs(_poisson_eps(direction, search_grid))
    cert = in_epochs(_certifier(direction, grid, search_grid))

    def one(e, d, s, q_, spe_):
        return _solve_traced(fn, e, (d, s, q_, spe_), 1.0, 2.0, decreasing=False, lower_limit=1.0,
                             upper_limit=float(max_epochs), log_scale=True, integer=True, rtol=0.0, atol=0.0,
                             max_steps=100, max_expand=64, growth=2.0, certify_fn=cert,
                             certify_margin=_CERTIFY_MARGIN, report_limit=True)

    return _batched(one, eps, delta, sigma, q, spe)


# ------------------------------------------------------------------------------------------------
# shuffling: the accountant is jaxdp.shuffle (resolved at call time)
# ------------------------------------------------------------------------------------------------


def _shuffle_eps_guarded(eps_fn):
    """jaxdp.shuffle.epsilon_for_delta (its own default grid, as the public call), guarded by the linear test."""
    def fn(d, sigma, m, e_):
        eps = eps_fn(d, noise_multiplier=sigma, num_rounds=m, num_epochs=e_)
        lb = _gaussian_delta_lower(jax.lax.stop_gradient(eps), _shuffle_mu_linear(*jax.lax.stop_gradient((sigma, m, e_))))
        return _guard(eps, _consistent_eps(eps, d, lb))
    return fn


def _shuffle_gap_guarded(gap_fn, method):
    """jaxdp.shuffle.delta_gap; for the bounds ("exact", "berry_esseen") a gap below the linear-test
    lower bound (a failure read as 0, say) counts as infeasible, never as "feasible"."""
    def fn(sigma, m, e_):
        g = gap_fn(noise_multiplier=sigma, num_rounds=m, num_epochs=e_, method=method)
        if method not in ("exact", "berry_esseen"):  # approximations (documented as such)
            return g
        lb = _shuffle_gap_lower(sigma, m, e_)
        return _guard(g, jnp.isnan(g) | (jax.lax.stop_gradient(g) >= lb * (1.0 - 1e-9) - 1e-12))
    return fn


def _envelope_gap(*, noise_multiplier, num_rounds, num_epochs, method):
    del method  # only called for method="exact" below the law's domain (rounds_solution)
    return _shuffle_attr("delta_gap_envelope")(noise_multiplier=noise_multiplier, num_rounds=num_rounds,
                                               num_epochs=num_epochs)


def _shuffle_attr(name):
    try:
        mod = importlib.import_module("jaxdp.shuffle")
    except ImportError as e:  # pragma: no cover
        raise NotImplementedError(f"jaxdp.shuffle is not available: {e}") from None
    fn = getattr(mod, name, None)
    if fn is None:
        raise NotImplementedError(f"jaxdp.shuffle.{name} is not available yet")
    return fn


@functools.partial(jit, static_argnames=("eps_fn", "rtol", "max_steps", "sigma_range"))
def _shuffle_sigma_core(eps, delta, m, epochs, *, eps_fn, rtol, max_steps, sigma_range):
    fn0 = _shuffle_eps_guarded(eps_fn)

    def fn(sigma, p):
        d, m_, e_ = p
        return fn0(d, sigma, m_, e_)

    def one(e, d, m_, ep):
        return _solve_traced(fn, e, (d, m_, ep), 0.5, 2.0, decreasing=True, lower_limit=sigma_range[0],
                             upper_limit=sigma_range[1], log_scale=True, integer=False, rtol=rtol, atol=0.0,
                             max_steps=max_steps, max_expand=64, growth=2.0, report_limit=True)

    return _batched(one, eps, delta, m, epochs)


def shuffle_noise_multiplier(epsilon, delta, *, num_rounds, num_epochs=1, rtol=1e-10, max_steps=100,
                             sigma_range=_SIGMA_LIMITS, throw=True) -> Solution:
    r"""Smallest sigma with ``jaxdp.shuffle.epsilon_for_delta(delta, ...) <= epsilon`` (shuffled DP-SGD)."""
    e, oke = check("epsilon", epsilon, lo=0.0, lo_open=True)
    d, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    m, okm = check("num_rounds", num_rounds, lo=1.0)
    ep, oke2 = check("num_epochs", num_epochs, lo=1.0, integer=True)
    shape = check_broadcast(epsilon=e, delta=d, num_rounds=m, num_epochs=ep)
    ok = jnp.broadcast_to(oke & okd & okm & oke2, shape)
    sol = _shuffle_sigma_core(jnp.where(oke, e, 1.0), jnp.where(okd, d, 1e-5), jnp.where(okm, m, 10.0),
                              jnp.where(oke2, ep, 1.0), eps_fn=_shuffle_attr("epsilon_for_delta"), rtol=rtol,
                              max_steps=max_steps, sigma_range=tuple(sigma_range))
    return _finalize(sol, ok, throw, "shuffle noise_multiplier calibration")


@functools.partial(jit, static_argnames=("gap_fn", "method", "rtol", "max_rounds", "single_epoch"))
def _rounds_core(gap, sigma, epochs, *, gap_fn, method, rtol, max_rounds, single_epoch):
    fn0 = _shuffle_gap_guarded(gap_fn, method)

    def fn(m, p):
        s, e_ = p
        # one epoch known before tracing: a concrete E = 1, so the gap compiles its single-epoch law
        # only (a traced E would compile the whole E-epoch PLD composition into the search as well)
        return fn0(s, m, 1.0 if single_epoch else e_)

    def one(g, s, e_):
        lo = 100.0
        if method == "berry_esseen":
            # the closed form applies (is finite) only in its regime M >= e^{3 / sigma^2}
            lo = jnp.maximum(lo, 1.01 * jnp.exp(jnp.minimum(log_regime_rounds(s), 600.0)))
        sol = _solve_traced(fn, g, (s, e_), lo, 10.0 * lo, decreasing=True, lower_limit=1.0,
                            upper_limit=float(max_rounds), log_scale=True, integer=False, rtol=rtol, atol=0.0,
                            max_steps=100, max_expand=200, growth=2.0)
        n = extreme_integer(fn, (s, e_), g, jax.lax.stop_gradient(sol.root), sol.stats["infeasible_end"],
                            decreasing=True, margin=_INT_MARGIN)
        n = jnp.where(jnp.isfinite(sol.root), jnp.maximum(n, 1.0), jnp.nan)
        return Solution(value=n, root=sol.root, result=sol.result, stats=sol.stats)

    return _batched(one, gap, sigma, epochs)


def rounds_solution(*, delta_gap, noise_multiplier, num_epochs=1, method="exact", rtol=1e-10,
                    max_rounds=1e15, throw=True) -> Solution:
    """Like :func:`rounds` but returns the full :class:`Solution` (``value`` integer M, ``root`` real M)."""
    d, okd = check("delta_gap", delta_gap, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    s, oks = check("noise_multiplier", noise_multiplier, lo=0.0, lo_open=True)
    ep, oke = check("num_epochs", num_epochs, lo=1.0, integer=True)
    shape = check_broadcast(delta_gap=d, noise_multiplier=s, num_epochs=ep)
    ok = jnp.broadcast_to(okd & oks & oke, shape)
    gap_fn = _shuffle_attr("delta_gap")
    if method == "exact" and not is_traced(s) and bool(np.all(np.asarray(s) < SIGMA_MIN)):
        # the numerical law is NaN there, so the exact gap is its rigorous envelope: solve on the
        # envelope alone (same numbers) instead of compiling the whole law into the solver
        gap_fn = _envelope_gap
    single = not is_traced(ep) and bool(np.all(np.asarray(ep) == 1))
    sol = _rounds_core(jnp.where(okd, d, 0.01), jnp.where(oks, s, 1.0), jnp.where(oke, ep, 1.0),
                       gap_fn=gap_fn, method=method, rtol=rtol, max_rounds=float(max_rounds), single_epoch=single)
    return _finalize(sol, ok, throw, "shuffle rounds calibration")


def rounds(*, delta_gap, noise_multiplier, num_epochs=1, method="exact"):
    r"""Smallest number of rounds per epoch M with ``jaxdp.shuffle.delta_gap(...) <= delta_gap``.

    Returns ``(M, M_real)``: the integer M (rounded toward feasibility: the smallest feasible
    integer) and the real root of the (real-valued in M) gap.  ``method`` is passed to
    :func:`jaxdp.shuffle.delta_gap` ("exact", "berry_esseen", "clt", "edgeworth").  Gradients of
    ``M_real`` w.r.t. ``delta_gap`` and ``noise_multiplier`` by the implicit-function theorem.
    """
    sol = rounds_solution(delta_gap=delta_gap, noise_multiplier=noise_multiplier, num_epochs=num_epochs,
                          method=method)
    return sol.value, sol.root


def samples(*, delta_gap, noise_multiplier, batch_size, num_epochs=1, method="exact"):
    """Training-set size N = M * batch_size needed for the shuffled gap (M from :func:`rounds`)."""
    b, _ = check("batch_size", batch_size, lo=1.0, integer=True)
    m, m_real = rounds(delta_gap=delta_gap, noise_multiplier=noise_multiplier, num_epochs=num_epochs, method=method)
    return m * b, m_real * b


@functools.partial(jit, static_argnames=("gap_fn", "method", "max_epochs"))
def _shuffle_epochs_core(gap, sigma, m, *, gap_fn, method, max_epochs):
    fn0 = _shuffle_gap_guarded(gap_fn, method)

    def fn(e_, p):
        s, m_ = p
        return fn0(s, m_, e_)

    def one(g, s, m_):
        return _solve_traced(fn, g, (s, m_), 1.0, 2.0, decreasing=False, lower_limit=1.0,
                             upper_limit=float(max_epochs), log_scale=True, integer=True, rtol=0.0, atol=0.0,
                             max_steps=100, max_expand=64, growth=2.0, report_limit=True)

    return _batched(one, gap, sigma, m)


@functools.partial(jit, static_argnames=("eps_fn", "max_epochs"))
def _shuffle_epochs_eps_core(eps, delta, sigma, m, *, eps_fn, max_epochs):
    fn0 = _shuffle_eps_guarded(eps_fn)

    def fn(e_, p):
        d, s, m_ = p
        return fn0(d, s, m_, e_)

    def one(e, d, s, m_):
        return _solve_traced(fn, e, (d, s, m_), 1.0, 2.0, decreasing=False, lower_limit=1.0,
                             upper_limit=float(max_epochs), log_scale=True, integer=True, rtol=0.0, atol=0.0,
                             max_steps=100, max_expand=64, growth=2.0, report_limit=True)

    return _batched(one, eps, delta, sigma, m)


def epochs(*, noise_multiplier, epsilon=None, delta=None, delta_gap=None, sampling="shuffle",
           num_rounds=None, sampling_probability=None, method="exact", max_epochs=100_000,
           grid=_pld.DEFAULT_GRID, throw=True, search_grid=None) -> Solution:
    r"""Largest number of epochs E that keeps the privacy target (integer, rounded toward feasibility).

    Targets: ``epsilon`` at ``delta`` (shuffle or Poisson), or a shuffle ``delta_gap`` (with
    ``method``).  Poisson: ``num_steps = E * num_rounds`` with ``num_rounds`` steps per epoch
    (default ``ceil(1 / sampling_probability)``); feasible by ``jaxdp.poisson.epsilon_for_delta(...,
    grid=grid)`` (searched on ``search_grid``, certified on ``grid``, as in
    :func:`poisson_noise_multiplier`).  Returns a :class:`Solution` (``value`` = E; E = 1
    infeasible gives result INFEASIBLE; E = ``max_epochs`` feasible gives AT_LIMIT).
    """
    check_choice("sampling", sampling, ("poisson", "shuffle"))
    s, oks = check("noise_multiplier", noise_multiplier, lo=0.0, lo_open=True)
    if delta_gap is not None:
        if sampling != "shuffle":
            raise ValueError("delta_gap targets are for sampling='shuffle'")
        g, okg = check("delta_gap", delta_gap, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        m, okm = check("num_rounds", num_rounds, lo=1.0)
        shape = check_broadcast(noise_multiplier=s, delta_gap=g, num_rounds=m)
        ok = jnp.broadcast_to(oks & okg & okm, shape)
        sol = _shuffle_epochs_core(jnp.where(okg, g, 0.01), jnp.where(oks, s, 1.0), jnp.where(okm, m, 10.0),
                                   gap_fn=_shuffle_attr("delta_gap"), method=method, max_epochs=int(max_epochs))
        return _finalize(sol, ok, throw, "epochs calibration")
    if epsilon is None or delta is None:
        raise ValueError("epochs needs epsilon and delta, or delta_gap")
    e, oke = check("epsilon", epsilon, lo=0.0, lo_open=True)
    d, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    if sampling == "shuffle":
        m, okm = check("num_rounds", num_rounds, lo=1.0)
        shape = check_broadcast(noise_multiplier=s, epsilon=e, delta=d, num_rounds=m)
        ok = jnp.broadcast_to(oks & oke & okd & okm, shape)
        sol = _shuffle_epochs_eps_core(jnp.where(oke, e, 1.0), jnp.where(okd, d, 1e-5), jnp.where(oks, s, 1.0),
                                       jnp.where(okm, m, 10.0), eps_fn=_shuffle_attr("epsilon_for_delta"),
                                       max_epochs=int(max_epochs))
        return _finalize(sol, ok, throw, "epochs calibration")
    q, okq = check("sampling_probability", sampling_probability, lo=0.0, hi=1.0, lo_open=True)
    if num_rounds is None:
        spe, okm = jnp.ceil(1.0 / jnp.where(okq, q, 0.5)), okq
    else:
        spe, okm = check("num_rounds", num_rounds, lo=1.0, integer=True)
    shape = check_broadcast(noise_multiplier=s, epsilon=e, delta=d, sampling_probability=q, num_rounds=spe)
    ok = jnp.broadcast_to(oks & oke & okd & okq & okm, shape)
    sol = _poisson_epochs_core(jnp.where(oke, e, 1.0), jnp.where(okd, d, 1e-5), jnp.where(oks, s, 1.0),
                               jnp.where(okq, q, 0.5), jnp.where(okm, spe, 1.0), direction="both", grid=grid,
                               search_grid=_search_grid(grid, search_grid), max_epochs=int(max_epochs))
    return _finalize(sol, ok, throw, "epochs calibration")


# ------------------------------------------------------------------------------------------------
# GDP mu targets (CLT proxies: approximations, not bounds; say so where used)
# ------------------------------------------------------------------------------------------------


def _mu_fn(sampling):
    if sampling == "poisson":
        def fn(sigma, p):
            return _cf.poisson_clt_mu(sigma, *p)  # real T
    else:
        def fn(sigma, p):
            return _cf.shuffle_clt_mu(sigma, *p)
    return fn


@functools.partial(jit, static_argnames=("sampling",))
def _mu_core(mu, a, b, *, sampling):
    fn = _mu_fn(sampling)

    def one(mu_, a_, b_):
        return _solve_traced(fn, mu_, (a_, b_), 0.5, 2.0, decreasing=True, lower_limit=1e-2, upper_limit=1e6,
                             log_scale=True, integer=False, rtol=1e-12, atol=0.0, max_steps=100, max_expand=64,
                             growth=2.0, report_limit=True)

    return _batched(one, mu, a, b)


def noise_multiplier_for_mu(mu, *, sampling="poisson", sampling_probability=None, num_steps=None,
                            num_rounds=None, num_epochs=1, throw=True) -> Solution:
    r"""Smallest sigma whose CLT Gaussian-DP parameter is at most ``mu`` (an approximation, not a bound).

    Poisson: Bu et al. :math:`\mu = q\sqrt{T(e^{1/\sigma^2}-1)}`; shuffle:
    :math:`\mu_E = \sqrt{E(e^{1/\sigma^2}-1)/M}`.
    """
    check_choice("sampling", sampling, ("poisson", "shuffle"))
    m_, okmu = check("mu", mu, lo=0.0, lo_open=True)
    if sampling == "poisson":
        a, oka = check("sampling_probability", sampling_probability, lo=0.0, hi=1.0, lo_open=True)
        b, okb = check("num_steps", num_steps, lo=1.0)  # CLT formula: real T is meaningful
    else:
        a, oka = check("num_rounds", num_rounds, lo=1.0)
        b, okb = check("num_epochs", num_epochs, lo=1.0, integer=True)
    shape = check_broadcast(mu=m_, **({"sampling_probability": a, "num_steps": b} if sampling == "poisson"
                                                                      else {"num_rounds": a, "num_epochs": b}))
    ok = jnp.broadcast_to(okmu & oka & okb, shape)
    sol = _mu_core(jnp.where(okmu, m_, 1.0), jnp.where(oka, a, 0.5), jnp.where(okb, b, 1.0), sampling=sampling)
    return _finalize(sol, ok, throw, "mu calibration")


# ------------------------------------------------------------------------------------------------
# Renyi Pufferfish: smallest Laplace / Gaussian scale (thin wrappers over jaxdp.pufferfish)
# ------------------------------------------------------------------------------------------------


def rpp_scale(samples_i, samples_j, *, alpha, epsilon, noise="laplace", weights_i=None, weights_j=None,
              lower=None, upper=None, rtol=1e-8, throw=True, **divergence_kwargs) -> Solution:
    r"""Smallest noise scale b (Laplace) / std (Gaussian) with (alpha, epsilon)-Renyi Pufferfish privacy.

    Solves :math:`\max(D_\alpha(\mu_i * p_b\|\mu_j * p_b), D_\alpha(\mu_j * p_b\|\mu_i * p_b)) \le \varepsilon`
    with the exact divergence of :func:`jaxdp.pufferfish.renyi_divergence` (its upper value, which
    includes the stated quadrature margin), through :func:`solve`.  Differentiable in ``epsilon``,
    ``alpha`` and the atoms.  Scalar targets (vmap for batches).
    """
    import jaxdp.pufferfish as pf

    check_choice("noise", noise, ("laplace", "gaussian"))
    x = jnp.asarray(samples_i, jnp.float64)
    y = jnp.asarray(samples_j, jnp.float64)
    e, oke = check("epsilon", epsilon, lo=0.0, lo_open=True)
    wi = None if weights_i is None else jnp.asarray(weights_i, jnp.float64)
    wj = None if weights_j is None else jnp.asarray(weights_j, jnp.float64)

    def fn(b, p):
        xi, yj, a, w1, w2 = p
        _, d1 = pf.renyi_divergence(xi, yj, alpha=a, noise=noise, scale=b, weights_i=w1, weights_j=w2,
                                    return_upper=True, **divergence_kwargs)
        _, d2 = pf.renyi_divergence(yj, xi, alpha=a, noise=noise, scale=b, weights_i=w2, weights_j=w1,
                                    return_upper=True, **divergence_kwargs)
        return jnp.maximum(d1, d2)

    spread = jnp.maximum(jnp.max(jnp.abs(jnp.concatenate([x, y]) - jnp.median(jnp.concatenate([x, y])))), 1e-6)
    lo = spread * 0.1 if lower is None else lower
    hi = spread * 10.0 if upper is None else upper
    sol = _solve_traced(fn, e, (x, y, jnp.asarray(alpha, jnp.float64), wi, wj), lo, hi, decreasing=True,
                        lower_limit=1e-12, upper_limit=1e12, log_scale=True, integer=False, rtol=rtol, atol=0.0,
                        max_steps=100, max_expand=64, growth=2.0, report_limit=True)
    return _finalize(sol, oke, throw, "RPP scale calibration")


# ------------------------------------------------------------------------------------------------
# stable entry points
# ------------------------------------------------------------------------------------------------


# ------------------------------------------------------------------------------------------------
# any event: the accountant is jaxdp.account
# ------------------------------------------------------------------------------------------------


def _event_eps(build, neighboring, grid):
    """``account(build(x, params)).epsilon(delta).value``: the certified upper end, as a user reads it."""
    def fn(x, p):
        delta, params = p
        return account(build(x, params), neighboring=neighboring, grid=grid).epsilon(delta).value

    return fn


@functools.partial(jit, static_argnames=(
    "build", "decreasing", "lower_limit", "upper_limit", "log_scale", "integer", "neighboring", "grid",
    "search_grid", "rtol", "max_steps"))
def _event_core(eps, delta, params, lower, upper, *, build, decreasing, lower_limit, upper_limit, log_scale,
                integer, neighboring, grid, search_grid, rtol, max_steps):
    fn = _event_eps(build, neighboring, search_grid)
    cert = None if search_grid == grid else _event_eps(build, neighboring, grid)
    return _solve_traced(fn, eps, (delta, params), lower, upper, decreasing=decreasing, lower_limit=lower_limit,
                         upper_limit=upper_limit, log_scale=log_scale, integer=integer, rtol=rtol, atol=0.0,
                         max_steps=max_steps, max_expand=64, growth=2.0, certify_fn=cert,
                         certify_margin=_CERTIFY_MARGIN if cert is not None else 0.0, report_limit=True)


def event_parameter(build: Callable[[jax.Array, Any], Any], *, epsilon, delta, decreasing: bool, lower, upper,
                    params: Any = None, lower_limit: float = 0.0, upper_limit: float = math.inf,
                    log_scale: bool = True, integer: bool = False, neighboring: str = "add_remove", grid=None,
                    search_grid=None, rtol: float = 1e-8, max_steps: int = 100, throw: bool = True) -> Solution:
    r"""The extreme parameter x of an event family meeting a privacy target, for any event.

    ``build(x, params)`` returns a :mod:`jaxdp.events` tree (e.g. ``lambda s, p: SelfComposed(
    PoissonSampled(p, Gaussian(s)), 1000)``); the constraint is the certified
    ``jaxdp.account(build(x, params), neighboring=neighboring, grid=grid).epsilon(delta).value <=
    epsilon``, i.e. exactly the number a user reads from :func:`jaxdp.account`.  ``decreasing=True``
    (x is a noise level: more x, less leakage) returns the **smallest** feasible x, ``False`` (x is a
    count of steps or epochs) the **largest**; ``integer=True`` searches integers.  The search is
    :func:`solve` (bracket expansion from ``[lower, upper]`` within ``[lower_limit, upper_limit]``,
    then Chandrupatla), so the answer is a point at which the constraint was *evaluated* feasible.

    ``search_grid``: a cheaper grid for the search; its answer is then certified on ``grid`` (one
    evaluation, moving toward the safe side if it fails there, with a 1e-4 relative margin on
    epsilon), so feasibility is always decided by ``grid``.

    ``build`` is a static argument of the compiled search (it decides the program): pass the same
    function object to reuse one compilation across calls (a new ``lambda`` per call compiles anew).

    Scalar ``epsilon`` / ``delta`` (use :func:`jax.vmap` for batches).  Gradients with respect to
    ``epsilon``, ``delta`` and every leaf of ``params`` by the implicit-function theorem at the
    answer (real problems; an integer answer or one held at a range limit has derivative 0).  A
    result that is not SUCCESSFUL raises :class:`CalibrationError` eagerly (``throw=True``); under
    ``jit`` the value is then NaN.

    Example (a two-phase schedule whose noise is scaled together; no closed form exists)::

        >>> from jaxdp.events import Composed, Gaussian, PoissonSampled, SelfComposed
        >>> def schedule(s, p):
        ...     return Composed((SelfComposed(PoissonSampled(0.01, Gaussian(s)), 500),
        ...                      SelfComposed(PoissonSampled(0.02, Gaussian(1.5 * s)), 300)))
        >>> sol = event_parameter(schedule, epsilon=2.0, delta=1e-5, decreasing=True, lower=0.5, upper=2.0)  # doctest: +SKIP
    """
    if not callable(build):
        raise TypeError(f"build must be a callable build(x, params) -> event, got {type(build).__name__}")
    check_choice("neighboring", neighboring, ("add_remove", "replace_one"))
    e, oke = check("epsilon", epsilon, lo=0.0, lo_open=True)
    d, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    for name, v in (("epsilon", e), ("delta", d)):
        if jnp.ndim(v) != 0:
            raise ValueError(f"{name} must be a scalar (vmap event_parameter for batches), got shape {jnp.shape(v)}")
    lo_l, up_l = float(lower_limit), float(upper_limit)
    if not lo_l < up_l:
        raise ValueError(f"lower_limit must be below upper_limit, got [{lo_l}, {up_l}]")
    if log_scale and lo_l < 0.0:
        raise ValueError(f"log_scale=True needs lower_limit >= 0, got {lo_l}")
    if not is_traced(lower) and not is_traced(upper):
        for name, v in (("lower", lower), ("upper", upper)):
            x = float(v)
            if not (lo_l <= x <= up_l and (x > 0.0 or not log_scale)):
                raise ValueError(f"{name} must be in [lower_limit, upper_limit] = [{lo_l}, {up_l}]"
                                 f"{' and > 0 (log_scale)' if log_scale else ''}, got {x}")
    # the family's structure and default grid, eagerly (an unsupported event is named here)
    probe = account(build(jnp.asarray(lower, jnp.float64), params), neighboring=neighboring, grid=grid)
    grid = probe.grid
    search_grid = grid if search_grid is None else search_grid
    if not isinstance(search_grid, _pld.Grid):
        raise TypeError(f"search_grid must be a jaxdp.core.pld.Grid or None, got {type(search_grid).__name__}")
    sol = _event_core(jnp.where(oke, e, 1.0), jnp.where(okd, d, 1e-5), params, lower, upper, build=build,
                      decreasing=bool(decreasing), lower_limit=lo_l, upper_limit=up_l, log_scale=bool(log_scale),
                      integer=bool(integer), neighboring=neighboring, grid=grid, search_grid=search_grid,
                      rtol=float(rtol), max_steps=int(max_steps))
    return _finalize(sol, oke & okd, throw, "event_parameter calibration")


def noise_multiplier(*, epsilon, delta, sampling="poisson", num_steps=None, sampling_probability=None,
                     num_rounds=None, num_epochs=1):
    r"""Smallest noise multiplier sigma meeting (``epsilon``, ``delta``).

    ``sampling="poisson"``: certified PLD accounting of ``num_steps`` Poisson-subsampled Gaussian
    steps with rate ``sampling_probability`` (worse of add/remove; ``num_steps`` defaults to
    ``num_epochs * ceil(1 / sampling_probability)``).  ``sampling="shuffle"``: ``num_rounds`` rounds
    per epoch, ``num_epochs`` epochs, exact shuffled accounting (:func:`jaxdp.shuffle.epsilon_for_delta`).

    Broadcasts over array arguments (one calibration per element, batched in one compiled solve);
    jit/vmap-able; ``jax.grad`` gives :math:`\partial\sigma^\star/\partial\varepsilon` and
    :math:`\partial\sigma^\star/\partial\delta` by the implicit-function theorem.  The returned
    sigma is always feasible (certified :math:`\varepsilon(\sigma) \le` ``epsilon``): infeasible
    targets raise :class:`CalibrationError` eagerly and give NaN under ``jit``.  For the result
    code and solver statistics use :func:`poisson_noise_multiplier` / :func:`shuffle_noise_multiplier`.

    Example:
      >>> round(float(noise_multiplier(epsilon=1.0, delta=1e-5, sampling_probability=0.01, num_steps=1000)), 3)
      1.415
    """
    check_choice("sampling", sampling, ("poisson", "shuffle"))
    if sampling == "poisson":
        if sampling_probability is None:
            raise ValueError("sampling='poisson' needs sampling_probability")
        if num_steps is None:
            q, _ = check("sampling_probability", sampling_probability, lo=0.0, hi=1.0, lo_open=True)
            e, _ = check("num_epochs", num_epochs, lo=1.0, integer=True)
            if is_traced(q) or is_traced(e):
                num_steps = e * jnp.ceil(1.0 / q)
            else:
                num_steps = np.asarray(e) * np.ceil(1.0 / np.asarray(q))
        return poisson_noise_multiplier(epsilon, delta, sampling_probability=sampling_probability,
                                        num_steps=num_steps).value
    if num_rounds is None:
        raise ValueError("sampling='shuffle' needs num_rounds")
    return shuffle_noise_multiplier(epsilon, delta, num_rounds=num_rounds, num_epochs=num_epochs).value


__all__ = [
    "solve", "Solution", "RESULTS", "SUCCESSFUL", "INFEASIBLE", "MAX_STEPS", "NONFINITE", "CalibrationError",
    "CALIBRATION_GRID", "noise_multiplier", "rounds", "rounds_solution", "samples", "epochs",
    "poisson_noise_multiplier", "shuffle_noise_multiplier", "noise_multiplier_for_mu", "rpp_scale",
    "event_parameter",
]
