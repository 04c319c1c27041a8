r"""The one root finder of jaxdp: the feasible end of a bracketed search on a monotone function.

Every solver of the library (calibration, the shuffled planning searches, the Pufferfish scales,
the Gaussian eps(delta), the Poisson guards, the CLI's smallest M) is a call of :func:`find_root`
(the inversions inside a law's tabulation, e.g. the shuffled law's cdf thresholds at thousands of
points, are vectorised fixed-step Newton/bisection steps of that law, not solvers):
given :math:`g(x, \theta)` monotone in a scalar x and a target :math:`\tau`, it returns the
**feasible** end of the final bracket (:math:`g \le \tau` was *evaluated* there), so a failed or
unconverged search never hands back a point on the infeasible side.

* :math:`g` non-increasing in x (``decreasing=True``; more noise, less leakage): the smallest x with
  :math:`g(x) \le \tau`;
* :math:`g` non-decreasing (``decreasing=False``): the largest such x.

Method: bracket expansion (geometric, up to hard limits), then Chandrupatla's bracketed inverse
quadratic interpolation (Chandrupatla 1997; the method behind ``scipy.optimize.elementwise
.find_root``), all in one :func:`jax.lax.while_loop` whose body evaluates g once (one traced copy of
g: compiling an accountant several times would dominate the run time), so it runs under ``jit``
and ``vmap``.  ``log_scale`` searches in log x; ``integer`` on integers (the answer is the extreme
feasible integer).  Gradients: :func:`implicit` (the implicit-function theorem at the answer, not a
derivative of the iterations).

References:
  T. R. Chandrupatla, "A new hybrid quadratic/bisection algorithm for finding the zero of a
  nonlinear function without using derivatives", Adv. Eng. Software 28 (1997) 145-149.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

from . import _config  # noqa: F401  (float64)
from ._pytree import pytree_dataclass

# ------------------------------------------------------------------------------------------------
# result codes
# ------------------------------------------------------------------------------------------------

SUCCESSFUL = 0
INFEASIBLE = 1
MAX_STEPS = 2
NONFINITE = 3
AT_LIMIT = 4

RESULTS = {
    SUCCESSFUL: "successful",
    INFEASIBLE: "infeasible: no value in the allowed range meets the target",
    MAX_STEPS: "max_steps reached before the tolerance (the value is feasible but may not be tight)",
    NONFINITE: "nan: an input was invalid or the function returned NaN",
    AT_LIMIT: ("at the range limit: the limit itself meets the target, so the extreme feasible value may lie "
               "beyond it (the value is the feasible limit; widen the range)"),
}



@pytree_dataclass
class Root:
    """What :func:`find_root` found (scalars; vmap for batches).

    x: the feasible end of the final bracket (NaN unless ``result`` is SUCCESSFUL or MAX_STEPS);
    other: the infeasible end (x itself when the search stopped at a feasible limit);
    result: int32 code of :data:`RESULTS`; num_steps, num_expand: iterations and bracket
    expansions; residual, residual_other: g - target at x and at other; at_limit: x is the
    feasible-side range limit (the whole range there is feasible).
    """

    x: jax.Array
    other: jax.Array
    result: jax.Array
    num_steps: jax.Array
    num_expand: jax.Array
    residual: jax.Array
    residual_other: jax.Array
    at_limit: jax.Array


# ------------------------------------------------------------------------------------------------
# the search (scalar)
# ------------------------------------------------------------------------------------------------


def _to_u(x, log_scale):
    return jnp.log(x) if log_scale else x


def _to_x(u, log_scale):
    return jnp.exp(u) if log_scale else u


_RUNNING = -1


def _ends(x1, x2, f1, f2):
    """(infeasible end, feasible end, their residuals) of a bracket (feasible: residual <= 0)."""
    feas1 = f1 <= 0
    return (jnp.where(feas1, x2, x1), jnp.where(feas1, x1, x2), jnp.where(feas1, f2, f1),
            jnp.where(feas1, f1, f2))


def _nz(a):
    return jnp.where(a != 0, a, 1.0)


def _chandrupatla_step(s, ft, tol_v, converged, cpoint, max_steps):
    """Record the residual ``ft`` at ``s["v"]`` and choose the next point (Chandrupatla 1997: inverse
    quadratic interpolation where it is safe, bisection otherwise)."""
    x1, x2, f1, f2 = s["x1"], s["x2"], s["f1"], s["f2"]
    xt = s["v"]
    same = (ft > 0) == (f1 > 0)
    x3n, f3n = jnp.where(same, x1, x2), jnp.where(same, f1, f2)
    x2n, f2n = jnp.where(same, x2, x1), jnp.where(same, f2, f1)
    x1n, f1n = xt, ft
    fin = jnp.isfinite(f1n) & jnp.isfinite(f2n) & jnp.isfinite(f3n)

    xi_ = (x1n - x2n) / _nz(x3n - x2n)
    phi = (f1n - f2n) / _nz(f3n - f2n)
    ok_iqi = fin & (phi**2 < xi_) & ((1.0 - phi) ** 2 < 1.0 - xi_) & (x3n != x2n) & (f3n != f2n) & (f1n != f3n)
    t_iqi = (f1n / _nz(f2n - f1n) * f3n / _nz(f2n - f3n)
             + (x3n - x1n) / _nz(x2n - x1n) * f1n / _nz(f3n - f1n) * f2n / _nz(f3n - f2n))
    # IQI rejected: bisect, unless the secant step says the root is within the tolerance of x1
    # (then step just past it, which usually lands on the feasible side and ends the search)
    t_sec = f1n / _nz(f1n - f2n)
    near = fin & (t_sec >= 0) & (t_sec * jnp.abs(x2n - x1n) < tol_v(jnp.where(f1n <= 0, x1n, x2n)))
    tn = jnp.where(ok_iqi, t_iqi, jnp.where(near, 0.0, 0.5))
    va_, vb_, _, _ = _ends(x1n, x2n, f1n, f2n)
    # a step of (almost) the full tolerance: a root hit from the infeasible side then ends the
    # search with the next (feasible) point instead of a run of tolerance-sized bisections
    tl = jnp.clip(0.99 * tol_v(vb_) / jnp.maximum(jnp.abs(x2n - x1n), 1e-300), 0.0, 0.5)
    tn = jnp.clip(tn, tl, 1.0 - tl)
    n_it = s["n_it"] + 1
    st3 = jnp.where(jnp.isnan(ft), NONFINITE, jnp.where(converged(va_, vb_), SUCCESSFUL,
                    jnp.where(n_it >= max_steps, MAX_STEPS, _RUNNING))).astype(jnp.int32)
    return dict(s, x1=x1n, x2=x2n, x3=x3n, f1=f1n, f2=f2n, f3=f3n, t=tn, n_it=n_it, status=st3,
                v=cpoint(x1n, x2n, tn))


def _after_bracket_phase(s, sp):
    """Phases 1/2 done recording: decide expansion / start Chandrupatla / stop.  ``sp``: the
    solver's variable space (maps and limits of :func:`_search`)."""
    va, vb, fa, fb = s["va"], s["vb"], s["fa"], s["fb"]
    snap, converged, cpoint, x_of_v, v_of_x = sp["snap"], sp["converged"], sp["cpoint"], sp["x_of_v"], sp["v_of_x"]
    vmin, vmax, integer, sgn, growth = sp["vmin"], sp["vmax"], sp["integer"], sp["sgn"], sp["growth"]
    nan = jnp.isnan(fa) | jnp.isnan(fb)
    bracketed = (fa > 0) & (fb <= 0)
    stuck_hi = (fb > 0) & (vb >= vmax)
    stuck_lo = (fa <= 0) & (va <= vmin)
    out_of_exp = s["n_exp"] >= sp["max_expand"]
    # Chandrupatla start: x1 = feasible end, x2 = x3 = infeasible end, bisect first
    conv0 = converged(va, vb)
    status = jnp.where(nan, NONFINITE, jnp.where(bracketed, jnp.where(conv0, SUCCESSFUL, _RUNNING),
                       jnp.where(stuck_lo, SUCCESSFUL, jnp.where(stuck_hi | out_of_exp, INFEASIBLE, _RUNNING))))
    up = fb > 0
    w2 = s["w"] * growth
    v_exp = jnp.where(up, snap(vb + w2), snap(va - w2))
    if integer:
        base = jnp.where(up, vb, va)
        nxt = snap(v_of_x(x_of_v(base) + jnp.where(up, sgn, -sgn)))
        v_exp = jnp.where(v_exp == base, nxt, v_exp)
    v_c = cpoint(vb, va, 0.5)
    return dict(s, phase=jnp.where(bracketed, 3, 2).astype(jnp.int32), status=status.astype(jnp.int32),
                v=jnp.where(bracketed, v_c, v_exp), up=up, w=jnp.where(bracketed, s["w"], w2),
                x1=vb, x2=va, x3=va, f1=fb, f2=fa, f3=fa, t=jnp.asarray(0.5, jnp.float64),
                at_limit=(~nan) & (~bracketed) & stuck_lo)


def _search(fn, target, params, lower, upper, *, decreasing, lower_limit, upper_limit,
            log_scale, integer, rtol, atol, max_steps, max_expand, growth, method="chandrupatla"):
    """Scalar solve. Returns (x_feasible, x_infeasible, result, num_steps, num_expand, residual, at_limit).

    One ``lax.while_loop`` whose body evaluates ``fn`` exactly once (a single trace of ``fn``:
    compiling a PLD accountant several times would dominate the run time).  Internally the
    variable is v = +-u (u = x or log x) oriented so that the residual g - target is
    non-increasing in v: the feasible side is always +v.
    """
    f64 = jnp.float64
    target = jnp.asarray(target, f64)
    sgn = 1.0 if decreasing else -1.0
    # limits may be traced (the certificate solves from the answer of the search outward)
    xlo_lim = jnp.minimum(jnp.asarray(lower_limit, f64), jnp.asarray(upper_limit, f64))
    xhi_lim = jnp.maximum(jnp.asarray(lower_limit, f64), jnp.asarray(upper_limit, f64))

    def x_of_v(v):
        x = _to_x(sgn * v, log_scale)
        return jnp.round(x) if integer else x

    def v_of_x(x):
        return sgn * _to_u(x, log_scale)

    vmin = v_of_x(jnp.asarray(lower_limit if decreasing else upper_limit, f64))
    vmax = v_of_x(jnp.asarray(upper_limit if decreasing else lower_limit, f64))

    def snap(v):
        v = jnp.clip(v, vmin, vmax)
        if integer:
            v = v_of_x(jnp.clip(jnp.round(_to_x(sgn * v, log_scale)), xlo_lim, xhi_lim))
        return v

    def tol_v(vb_):
        xb = jnp.abs(_to_x(sgn * vb_, log_scale))
        tx = atol + rtol * xb
        return tx / jnp.maximum(xb, 1e-300) if log_scale else tx

    def converged(va_, vb_):
        if integer:
            return jnp.abs(x_of_v(vb_) - x_of_v(va_)) <= 1.0
        return jnp.abs(vb_ - va_) <= tol_v(vb_)

    def cpoint(x1, x2, t):
        xt = x1 + t * (x2 - x1)
        if integer:
            a_, b_ = x_of_v(x1), x_of_v(x2)
            xi = jnp.clip(x_of_v(xt), jnp.minimum(a_, b_) + 1.0, jnp.maximum(a_, b_) - 1.0)
            xt = v_of_x(xi)
        return xt

    va0 = snap(v_of_x(jnp.asarray(lower if decreasing else upper, f64)))
    vb0 = snap(v_of_x(jnp.asarray(upper if decreasing else lower, f64)))
    va0, vb0 = jnp.minimum(va0, vb0), jnp.maximum(va0, vb0)
    if method in ("bisection", "illinois"):
        return _bisection(fn, params, target, va0, vb0, x_of_v, converged, cpoint, max_steps, method == "illinois")
    sp = dict(snap=snap, converged=converged, cpoint=cpoint, x_of_v=x_of_v, v_of_x=v_of_x, vmin=vmin,
              vmax=vmax, integer=integer, sgn=sgn, growth=growth, max_expand=max_expand)
    w0 = jnp.maximum(vb0 - va0, 1.0 if (integer and not log_scale) else 1e-3)
    return _chandrupatla(fn, params, target, va0, vb0, w0, sp, tol_v, max_steps)


def _chandrupatla(fn, params, target, va0, vb0, w0, sp, tol_v, max_steps):
    """The expanding-bracket Chandrupatla search of :func:`_search` (``sp``: its variable space)."""
    f64 = jnp.float64
    x_of_v, converged, cpoint, vmin = sp["x_of_v"], sp["converged"], sp["cpoint"], sp["vmin"]
    nanv = jnp.asarray(jnp.nan, f64)
    i0 = jnp.asarray(0, jnp.int32)
    # phases: 0 evaluate va, 1 evaluate vb, 2 expanding, 3 Chandrupatla
    st0 = dict(phase=i0, status=jnp.asarray(_RUNNING, jnp.int32), v=va0, up=jnp.asarray(False),
               va=va0, vb=vb0, fa=nanv, fb=nanv, w=w0, x1=nanv, x2=nanv, x3=nanv, f1=nanv, f2=nanv, f3=nanv,
               t=jnp.asarray(0.5, f64), n_exp=i0, n_it=i0, at_limit=jnp.asarray(False))

    def body(s):
        f = jnp.asarray(fn(x_of_v(s["v"]), params), f64) - target
        ph = s["phase"]
        # ---- record -----------------------------------------------------------------------------
        # phase 0 / 1
        # the first end already at the feasible-side limit and feasible: that limit is the answer
        # (by monotonicity the other end adds nothing), one evaluation; NaN there: stop
        done0 = (f <= 0) & (s["va"] <= vmin)
        st0_ = jnp.where(jnp.isnan(f), NONFINITE, jnp.where(done0, SUCCESSFUL, _RUNNING)).astype(jnp.int32)
        s0 = dict(s, fa=f, phase=jnp.asarray(1, jnp.int32), v=s["vb"], status=st0_, at_limit=done0)
        s1 = _after_bracket_phase(dict(s, fb=f), sp)
        # phase 2: the evaluated point becomes a bracket end
        up = s["up"]
        s2 = dict(s, va=jnp.where(up, s["vb"], s["v"]), fa=jnp.where(up, s["fb"], f),
                  vb=jnp.where(up, s["v"], s["va"]), fb=jnp.where(up, f, s["fa"]), n_exp=s["n_exp"] + 1)
        s2 = _after_bracket_phase(s2, sp)
        # phase 3: Chandrupatla update
        s3 = _chandrupatla_step(s, f, tol_v, converged, cpoint, max_steps)
        return jax.tree_util.tree_map(
            lambda a, b, c, d: jnp.where(ph == 0, a, jnp.where(ph == 1, b, jnp.where(ph == 2, c, d))),
            s0, s1, s2, s3)

    s = lax.while_loop(lambda s: s["status"] == _RUNNING, body, st0)
    status = s["status"]
    in_chand = s["phase"] == 3
    va_c, vb_c, fa_c, fb_c = _ends(s["x1"], s["x2"], s["f1"], s["f2"])
    at_limit = s["at_limit"]
    v_ans = jnp.where(in_chand, vb_c, jnp.where(at_limit, s["va"], s["vb"]))
    v_oth = jnp.where(in_chand, va_c, s["va"])
    res = jnp.where(in_chand, fb_c, jnp.where(at_limit, s["fa"], s["fb"]))
    res_oth = jnp.where(in_chand, fa_c, s["fa"])
    good = (status == SUCCESSFUL) | (status == MAX_STEPS)
    x_ans = jnp.where(good, x_of_v(v_ans), jnp.nan)
    x_oth = jnp.where(good, x_of_v(v_oth), jnp.nan)
    return Root(x=x_ans, other=x_oth, result=status, num_steps=s["n_it"], num_expand=s["n_exp"],
                residual=jnp.where(good, res, jnp.nan), residual_other=jnp.where(good, res_oth, jnp.nan),
                at_limit=at_limit)


def _bisection(fn, params, target, va0, vb0, x_of_v, converged, cpoint, max_steps, illinois=False):
    """The bisection of :func:`_search`'s oriented variable on the fixed bracket [va0, vb0].

    Steps 0 and 1 evaluate the ends (the feasible end infeasible: INFEASIBLE; the infeasible end
    feasible: the whole bracket is, ``at_limit``), then each step halves the bracket; one call site
    of ``fn``, a small loop to compile (the searches whose bracket is known from a closed form).
    ``illinois``: the next point is the regula-falsi point of the bracket, kept 1e-3 of its width
    inside (bisection where it is not finite), and an end kept twice in a row has its value halved
    (the Illinois rule)."""
    f64 = jnp.float64
    nan = jnp.asarray(jnp.nan, f64)
    # wa, wb: the ends' values as the Illinois rule weighs them (fa, fb stay the true residuals)
    st0 = dict(k=jnp.asarray(0, jnp.int32), status=jnp.asarray(_RUNNING, jnp.int32), va=va0, vb=vb0, fa=nan, fb=nan)
    if illinois:
        st0.update(wa=nan, wb=nan, side=jnp.asarray(0, jnp.int32))

    def body(s):
        k = s["k"]
        mid = cpoint(s["va"], s["vb"], 0.5)
        if illinois:
            fin = jnp.isfinite(s["wa"]) & jnp.isfinite(s["wb"]) & (s["wa"] > s["wb"])
            w = s["vb"] - s["va"]
            vf = (s["va"] * s["wb"] - s["vb"] * s["wa"]) / jnp.where(fin, s["wb"] - s["wa"], 1.0)
            mid = jnp.where(fin, jnp.clip(vf, s["va"] + 1e-3 * w, s["vb"] - 1e-3 * w), mid)
        v = jnp.where(k == 0, s["va"], jnp.where(k == 1, s["vb"], mid))
        f = jnp.asarray(fn(x_of_v(v), params), f64) - target
        feas = f <= 0
        first, second = k == 0, k == 1
        va = jnp.where(first | (k >= 2) & ~feas, v, s["va"])
        vb = jnp.where(second | (k >= 2) & feas, v, s["vb"])
        fa = jnp.where(first | (k >= 2) & ~feas, f, s["fa"])
        fb = jnp.where(second | (k >= 2) & feas, f, s["fb"])
        extra = {}
        if illinois:  # weights of the ends; the end kept twice in a row has its weight halved
            wa = jnp.where(first | (k >= 2) & ~feas, f, s["wa"])
            wb = jnp.where(second | (k >= 2) & feas, f, s["wb"])
            wa = jnp.where((k >= 2) & feas & (s["side"] == 1), 0.5 * wa, wa)
            wb = jnp.where((k >= 2) & ~feas & (s["side"] == -1), 0.5 * wb, wb)
            extra = dict(wa=wa, wb=wb, side=jnp.where(k >= 2, jnp.where(feas, 1, -1), 0).astype(jnp.int32))
        status = jnp.where(
            jnp.isnan(f), NONFINITE,
            jnp.where(first, jnp.where(feas, SUCCESSFUL, _RUNNING),
                      jnp.where(second & ~feas, INFEASIBLE,
                                jnp.where(converged(va, vb), SUCCESSFUL,
                                          jnp.where(k >= max_steps + 1, MAX_STEPS, _RUNNING)))))
        return dict(k=k + 1, status=status.astype(jnp.int32), va=va, vb=vb, fa=fa, fb=fb, **extra)

    s = lax.while_loop(lambda s: s["status"] == _RUNNING, body, st0)
    status = s["status"]
    at_limit = (s["k"] == 1) & (status == SUCCESSFUL)  # the infeasible end was feasible: all is
    good = (status == SUCCESSFUL) | (status == MAX_STEPS)
    v_ans = jnp.where(at_limit, s["va"], s["vb"])
    res = jnp.where(at_limit, s["fa"], s["fb"])
    return Root(x=jnp.where(good, x_of_v(v_ans), jnp.nan), other=jnp.where(good, x_of_v(s["va"]), jnp.nan),
                result=status, num_steps=jnp.maximum(s["k"] - 2, 0), num_expand=jnp.zeros((), jnp.int32),
                residual=jnp.where(good, res, jnp.nan), residual_other=jnp.where(good, s["fa"], jnp.nan),
                at_limit=at_limit)


def find_root(fn, target, params=None, *, decreasing: bool, lower, upper, lower_limit=-jnp.inf,
              upper_limit=jnp.inf, log_scale: bool = False, integer: bool = False, rtol: float = 1e-10,
              atol: float = 0.0, max_steps: int = 100, max_expand: int = 64, growth: float = 2.0,
              method: str = "chandrupatla") -> Root:
    r"""Feasible end of ``fn(x, params) <= target`` for ``fn`` monotone in a scalar x (see the module).

    Args:
      fn: ``fn(x, params) -> scalar``, traceable, monotone in x (NaN: the search stops, NONFINITE).
      target: scalar :math:`\tau`.  params: a pytree passed to ``fn``.
      decreasing: fn non-increasing in x (the smallest feasible x) or non-decreasing (the largest).
      lower, upper: the first bracket guess, expanded by ``growth`` (at most ``max_expand`` times)
        within ``[lower_limit, upper_limit]`` (which may be traced).
      log_scale, integer: search in log x; on integers.
      rtol, atol: stop when the bracket is narrower than ``atol + rtol |x|`` (integers: adjacent).
      max_steps: steps at most (then MAX_STEPS: x is feasible, perhaps not tight).
      method: ``"chandrupatla"`` (the default: fewest evaluations, for expensive functions) or
        ``"bisection"``: halving the fixed bracket ``[lower, upper]`` (no expansion), the smaller
        program to compile, for cheap functions whose bracket a closed form gives; ``"illinois"``:
        regula falsi with the Illinois rule on the same fixed bracket (a fixed, small number of
        evaluations of an expensive function: the Pufferfish quadrature).

    Returns:
      :class:`Root`.  No gradient flows through the iterations: wrap ``x`` with :func:`implicit`.
    """
    if method not in ("chandrupatla", "bisection", "illinois"):
        raise ValueError(f"method must be 'chandrupatla', 'bisection' or 'illinois', got {method!r}")
    if method == "illinois" and integer:
        raise ValueError("method='illinois' searches the reals: use 'bisection' or 'chandrupatla' with integer=True")
    sg = jax.lax.stop_gradient
    return _search(fn, sg(target), jax.tree_util.tree_map(sg, params), sg(lower), sg(upper),
                   decreasing=decreasing, lower_limit=lower_limit, upper_limit=upper_limit,
                   log_scale=log_scale, integer=integer, rtol=rtol, atol=atol, max_steps=max_steps,
                   max_expand=max_expand, growth=growth, method=method)


def extreme_integer(fn, params, target, x_feas, x_inf, *, decreasing: bool, margin: float = 0.0):
    """The extreme feasible integer from a real bracket ``[x_inf, x_feas]`` of ``fn <= target``.

    An integer search between the integers just outside the bracket (a relative tolerance spans many
    integers once the root is large, so rounding one end is not enough).  An integer counts as
    feasible only with ``margin`` (relative to the target); the rounded feasible end is returned
    when no infeasible integer lies on the other side.
    """
    params, target = jax.lax.stop_gradient((params, target))  # an integer: no tangent to carry
    b = jnp.ceil(x_feas) if decreasing else jnp.floor(x_feas)  # feasible
    a = jnp.floor(x_inf) if decreasing else jnp.ceil(x_inf)  # infeasible (when on the other side)
    inside = (a < b) if decreasing else (a > b)
    a = jnp.where(inside & jnp.isfinite(a), a, b)
    lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
    r = find_root(fn, target - margin * jnp.abs(target), params, decreasing=decreasing, lower=lo, upper=hi,
                  lower_limit=lo, upper_limit=hi, integer=True, max_steps=200, method="bisection")
    # b was feasible without the margin: it stays the answer when the margin makes every integer fail
    return jnp.where(jnp.isfinite(r.x), r.x, b)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def implicit(fn, x, at_limit, target, params):
    """Identity on a solved ``x`` (``fn(x, params) = target``); its JVP is the implicit-function theorem.

    ``dx = -(d_params fn . dparams - dtarget) / d_x fn`` at x, not a derivative of the iterations;
    zero where ``at_limit`` (a solution held at a range limit is locally constant)."""
    return x


@implicit.defjvp
def _implicit_jvp(fn, primals, tangents):
    x, at_limit, target, params = primals
    _, _, dt, dp = tangents
    xs = jnp.where(jnp.isfinite(x), x, 1.0)
    _, gx = jax.jvp(lambda z: fn(z, params), (xs,), (jnp.ones_like(xs),))
    _, gp = jax.jvp(lambda p: fn(xs, p), (params,), (dp,))
    num = gp - dt
    # a solution held at a range limit is locally constant (active bound)
    dx = jnp.where(at_limit, 0.0, -num / jnp.where(gx != 0, gx, jnp.nan))
    return x, dx


