"""Batched computations behind the ``jaxdp`` command (one compiled signature per quantity).

Every function here takes numpy-friendly inputs, runs **one** jitted call per command (values
batched into arrays, inputs padded to a fixed shape where a sweep is chunked), and returns plain
numpy arrays.  The subcommand modules of :mod:`jaxdp.cli` format them.

Planning finds the *smallest integer* M whose exact gap is <= delta with one compiled search
(:func:`jaxdp.roots.find_root` on integers, from the CLT guess); the gaps at M and M - 1 are
returned so the caller can show ``gap(M) <= delta < gap(M - 1)``.
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import jaxdp  # noqa: F401  (float64 before anything is traced)
from jaxdp._config import jit
from jaxdp import _tracecache
from jaxdp import closed_forms as _cf
from jaxdp.roots import INFEASIBLE, SUCCESSFUL, find_root
from jaxdp.core import accuracy as _acc
from jaxdp.core.pld import DEFAULT_GRID

MAX_ROUNDS = 1e12


# ------------------------------------------------------------------------------------------------
# integer search for the smallest feasible M
# ------------------------------------------------------------------------------------------------


def _smallest_rounds(gap, delta, max_rounds=MAX_ROUNDS, max_steps=96):
    """Smallest integer M in [1, max_rounds] with ``gap(M) <= delta`` (gap non-increasing in M).

    :func:`jaxdp.roots.find_root`: a bisection on integers in log M (a small program to compile; each
    step is one evaluation of the cheap exact gap).
    Returns ``(M, gap(M), gap(M - 1), iterations)``; M = inf when ``gap(max_rounds) > delta``, NaN
    if the search did not end on adjacent integers.  The gaps are the search's own evaluations
    (residual + delta: exact, as both lie within a factor 2 of delta near the answer).
    """
    r = find_root(lambda m, _: gap(m), delta, None, decreasing=True, lower=1.0, upper=max_rounds, lower_limit=1.0,
                  upper_limit=max_rounds, log_scale=True, integer=True, max_steps=max_steps, method="bisection")
    nan = jnp.float64(jnp.nan)
    m = jnp.where(r.result == SUCCESSFUL, r.x, jnp.where(r.result == INFEASIBLE, jnp.inf, nan))
    g_m = jnp.where(jnp.isfinite(m), r.residual + delta, nan)
    g_m1 = jnp.where(jnp.isfinite(m) & (m > 1.0), r.residual_other + delta, nan)
    return m, g_m, g_m1, r.num_steps + r.num_expand + 2


def _clt_rounds(delta, sigma, epochs):
    """CLT guess: gap of G_mu is 2 Phi(mu/2) - 1, mu^2 = E (e^{1/sigma^2} - 1) / M."""
    return epochs * _cf.ratio_variance(sigma) / _cf.gaussian_mu_of_tv(delta) ** 2


@functools.partial(jit, static_argnames=("multi_epoch",))
def _plan_core(delta, sigma, epochs, multi_epoch):
    from ..mechanisms import shuffled as _exact
    from ..shuffle import closed_form as cf

    def one(d, s, e):
        if multi_epoch:
            from .. import shuffle as _sh

            gap = lambda m: _sh.delta_gap(noise_multiplier=s, num_rounds=m, num_epochs=e)  # noqa: E731
        else:
            gap = lambda m: _exact.tv_gap_ends(s, m)[1]  # noqa: E731  (certified upper end, as shuffle.delta_gap)
        m, g_m, g_m1, it = _smallest_rounds(gap, d)
        m_be = jnp.ceil(cf.rounds_berry_esseen(d, s, e) - 1e-9)
        m_clt = jnp.ceil(_clt_rounds(d, s, e) - 1e-9)
        return dict(rounds_exact=m, gap_at_rounds=g_m, gap_at_rounds_minus_1=g_m1, iterations=it,
                    rounds_closed_form=m_be, rounds_clt=m_clt)

    return jax.vmap(one)(delta, sigma, epochs)


def plan(delta, sigma, epochs):
    """Arrays (broadcast) -> dict of numpy arrays: closed-form and exact rounds for each case."""
    d, s, e = np.broadcast_arrays(np.asarray(delta, float), np.asarray(sigma, float), np.asarray(epochs, float))
    multi = bool(np.any(e > 1))
    out = _tracecache.call(_plan_core, (jnp.asarray(d.ravel()), jnp.asarray(s.ravel()), jnp.asarray(e.ravel())), multi_epoch=multi)
    return {k: np.asarray(v) for k, v in out.items()}


@jit
def _gap_curve_e1(sigma, ms):
    from ..mechanisms import shuffled as _exact
    from ..shuffle import asymptotics as asy
    from ..shuffle import closed_form as cf

    s = jnp.broadcast_to(sigma, ms.shape)
    return dict(exact=_exact.tv_gap(s, ms), berry_esseen=jnp.where(s >= cf.regime_threshold(ms), cf.delta_berry_esseen(s, ms), jnp.nan),
                clt=asy.delta_gap_clt(s, ms), linear_test=cf.delta_linear_test(s, ms))


def gap_curve(sigma, ms, epochs=1):
    """Gap vs M for the plot of ``jaxdp plan`` (exact, closed form, CLT, linear-test lower bound)."""
    ms = jnp.asarray(np.asarray(ms, float))
    if epochs == 1:
        out = _tracecache.call(_gap_curve_e1, (jnp.float64(sigma), ms))
    else:
        from .. import shuffle as sh

        out = dict(exact=sh.delta_gap(noise_multiplier=sigma, num_rounds=ms, num_epochs=epochs),
                   berry_esseen=sh.delta_gap(noise_multiplier=sigma, num_rounds=ms, num_epochs=epochs, method="berry_esseen"),
                   clt=sh.delta_gap(noise_multiplier=sigma, num_rounds=ms, num_epochs=epochs, method="clt"),
                   linear_test=sh.delta_gap(noise_multiplier=sigma, num_rounds=ms, num_epochs=epochs, method="linear_test"))
    return {k: np.asarray(v) for k, v in out.items()}


# ------------------------------------------------------------------------------------------------
# shuffle: one configuration, everything at once
# ------------------------------------------------------------------------------------------------

#: type I errors of the printed trade-off table and of the plotted curve (fixed: one signature)
TABLE_A = (1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.2, 0.3, 0.5)
CURVE_A = tuple(np.concatenate([[0.0], np.logspace(-6, -2, 25), np.linspace(0.0125, 1.0, 80)]).tolist())


@functools.partial(jit, static_argnames=("multi_epoch", "accuracy"))
def _shuffle_core(sigma, m, e, deltas, a, multi_epoch, accuracy):
    from .. import shuffle as sh
    from ..mechanisms import shuffled as _exact

    if multi_epoch:
        br = sh.tradeoff_bracket(a, noise_multiplier=sigma, num_rounds=m, num_epochs=e)
        f_fwd = br.lower
        f_rev = sh.tradeoff_bracket(a, noise_multiplier=sigma, num_rounds=m, num_epochs=e, reverse=True).lower
        gb = sh.delta_gap_bracket(noise_multiplier=sigma, num_rounds=m, num_epochs=e)
        gap_lo, gap_up = gb.lower, gb.upper
    else:
        # both directions from one tabulated law (one program part instead of two)
        (f_fwd, _), (f_rev, _) = _exact.tradeoff_ends_both_directions(a, sigma, m)
        gap_lo, gap_up = _exact.tv_gap_ends(sigma, m)
    # traced: the first grid of --accuracy's ladder (shuffle_report refines what is still too wide)
    eb = sh.epsilon_for_delta_bracket(deltas, noise_multiplier=sigma, num_rounds=m, num_epochs=e, accuracy=accuracy)
    approx = {k: sh.tradeoff(a, noise_multiplier=sigma, num_rounds=m, num_epochs=e, method=k)
              for k in ("berry_esseen", "linear_test", "clt", "edgeworth")}
    gaps = {k: sh.delta_gap(noise_multiplier=sigma, num_rounds=m, num_epochs=e, method=k)
            for k in ("berry_esseen", "linear_test", "clt", "edgeworth")}
    return dict(tradeoff_exact=f_fwd, tradeoff_exact_reverse=f_rev, gap_exact_lower=gap_lo, gap_exact=gap_up,
                eps_lower=eb.lower, eps=eb.upper, mu_clt=_cf.shuffle_clt_mu(sigma, m, e),
                **{"tradeoff_" + k: v for k, v in approx.items()}, **{"gap_" + k: v for k, v in gaps.items()})


def _refined_eps(sigma, rounds, epochs, deltas, lo, up, accuracy):
    """The eps brackets of the report, refined on the finer grids of ``accuracy``'s ladder where wider
    than asked (:func:`jaxdp.core.accuracy.refine`, the library's rule; the report's brackets are its
    first rung).  Below the exact law's domain the brackets are the closed-form envelope's, which no
    grid narrows, so nothing is recompiled for them."""
    from .. import shuffle as sh
    from ..mechanisms.shuffled import SIGMA_MIN

    if sigma < SIGMA_MIN or not _acc.too_wide(lo, up, accuracy).any():
        return lo, up

    def at(grid, d):
        b = sh.epsilon_for_delta_bracket(d, noise_multiplier=sigma, num_rounds=rounds, num_epochs=epochs, grid=grid)
        return b.lower, b.upper

    with warnings.catch_warnings():  # the report says itself when a bracket stays too wide
        warnings.simplefilter("ignore", RuntimeWarning)
        return _acc.refine(at, (np.asarray(deltas, float),), accuracy, first=(lo, up))


def shuffle_report(sigma, rounds, epochs, deltas, accuracy=None):
    """Everything ``jaxdp shuffle`` prints; the eps brackets at most ``accuracy`` wide (relative)
    wherever a grid of the ladder gives that (default :data:`jaxdp.core.accuracy.DEFAULT_ACCURACY`)."""
    accuracy = _acc.check_accuracy(_acc.DEFAULT_ACCURACY if accuracy is None else accuracy)
    a = np.concatenate([np.asarray(TABLE_A), np.asarray(CURVE_A)])
    out = _tracecache.call(_shuffle_core, (jnp.float64(sigma), jnp.float64(rounds), jnp.float64(epochs),
                                           jnp.asarray(np.asarray(deltas, float)), jnp.asarray(a)),
                           multi_epoch=bool(epochs > 1), accuracy=accuracy)
    out = {k: np.asarray(v) for k, v in out.items()}
    out["eps_lower"], out["eps"] = _refined_eps(sigma, rounds, epochs, deltas, out["eps_lower"], out["eps"], accuracy)
    out["accuracy"] = accuracy
    out["eps_width"] = float(np.nanmax(_acc.relative_width(out["eps_lower"], out["eps"]), initial=0.0))
    n = len(TABLE_A)
    res = {k: v for k, v in out.items() if not k.startswith("tradeoff_")}
    res["table"] = {k: v[:n] for k, v in out.items() if k.startswith("tradeoff_")}
    res["curve"] = {k: v[n:] for k, v in out.items() if k.startswith("tradeoff_")}
    res["table_a"], res["curve_a"] = np.asarray(TABLE_A), np.asarray(CURVE_A)
    return res


# ------------------------------------------------------------------------------------------------
# Poisson
# ------------------------------------------------------------------------------------------------


@functools.partial(jit, static_argnames=("grid",))
def _poisson_core(sigma, q, t, deltas, epsilons, a, grid):
    from .. import poisson as po
    from ..shuffle import asymptotics as asy

    # one composed PLD for every number printed (poisson.summary)
    r = po.summary(deltas, epsilons, a, noise_multiplier=sigma, sampling_probability=q, num_steps=t, grid=grid)
    eb, db, f = r["epsilon"], r["delta"], r["tradeoff"].lower
    return dict(eps_lower=eb.lower, eps=eb.upper, delta_lower=db.lower, delta=db.upper, tradeoff=f,
                mu_bu=asy.mu_poisson_bu(sigma, q, t), mu_drs=asy.mu_poisson_drs(sigma, q, t))


#: the certified brackets of a report, as (lower, upper) keys: the ones ``accuracy`` is asked of
_POISSON_BRACKETS = (("eps_lower", "eps"), ("delta_lower", "delta"))


def _tighten(best, out):
    """Both reports are sound: keep the tighter end of every bracket and the higher trade-off lower
    bound (NaN, a failed value, gives way to a number)."""
    res = dict(out)
    for lo, up in _POISSON_BRACKETS:
        res[lo], res[up] = np.fmax(best[lo], out[lo]), np.fmin(best[up], out[up])
    res["tradeoff"] = np.fmax(best["tradeoff"], out["tradeoff"])
    return res


def _ends(out):
    """(lower, upper) ends of every bracket of a report, concatenated."""
    return tuple(np.concatenate([out[k[i]] for k in _POISSON_BRACKETS]) for i in (0, 1))


def poisson_report(sigma, q, steps, deltas, epsilons, accuracy=None):
    """eps and delta brackets, trade-off table and curve of one Poisson configuration, on the first
    grid of :data:`jaxdp.core.accuracy.LADDER` whose brackets are at most ``accuracy`` wide (the
    rule of :func:`jaxdp.core.accuracy.refine`: coarsest plausible rung first, the next one only
    while a bracket is wider than asked and the finer grid still narrows it by a third)."""
    accuracy = _acc.check_accuracy(_acc.DEFAULT_ACCURACY if accuracy is None else accuracy)
    a = np.concatenate([np.asarray(TABLE_A), np.asarray(CURVE_A)])
    args = (jnp.float64(sigma), jnp.float64(q), jnp.float64(steps), jnp.asarray(np.asarray(deltas, float)),
            jnp.asarray(np.asarray(epsilons, float)), jnp.asarray(a))
    out = None
    for grid in _acc.LADDER[_acc.first_rung(accuracy):]:
        new = {k: np.asarray(v) for k, v in _tracecache.call(_poisson_core, args, grid=grid).items()}
        before = None if out is None else _acc.relative_width(*_ends(out))
        out = new if out is None else _tighten(out, new)
        w, wide = _acc.relative_width(*_ends(out)), _acc.too_wide(*_ends(out), accuracy)
        # the rule of jaxdp.core.accuracy.refine, for one report: stop once nothing is too wide, or
        # once the finer grid narrowed none of what is
        if not wide.any() or (before is not None and not _acc.narrowed(before[wide], w[wide]).any()):
            break
    n = len(TABLE_A)
    f = out.pop("tradeoff")
    out["table"], out["curve"] = f[:n], f[n:]
    out["table_a"], out["curve_a"] = np.asarray(TABLE_A), np.asarray(CURVE_A)
    out.update(grid=grid, accuracy=accuracy, widest=float(np.nanmax(w, initial=0.0)))
    return out


# ------------------------------------------------------------------------------------------------
# compare: shuffle vs Poisson at q = 1/M, T = E M
# ------------------------------------------------------------------------------------------------


@jit
def _compare_core(delta, sigma, m, e):
    from .. import poisson as po
    from .. import shuffle as sh
    from ..shuffle import asymptotics as asy

    q, t = 1.0 / m, e * m
    es = sh.epsilon_for_delta_bracket(delta, noise_multiplier=sigma, num_rounds=m, num_epochs=e)
    ep = po.epsilon_for_delta_bracket(delta, noise_multiplier=sigma, sampling_probability=q, num_steps=t, grid=DEFAULT_GRID)
    return dict(eps_shuffle=es.upper, eps_shuffle_lower=es.lower, eps_poisson=ep.upper, eps_poisson_lower=ep.lower,
                mu_shuffle_clt=asy.mu_clt(sigma, m, e), mu_poisson_bu=asy.mu_poisson_bu(sigma, q, t),
                mu_poisson_drs=asy.mu_poisson_drs(sigma, q, t), clt_ratio=asy.clt_ratio(sigma))


def compare(delta, sigma, rounds, epochs):
    d, s, m, e = np.broadcast_arrays(*(np.asarray(x, float) for x in (delta, sigma, rounds, epochs)))
    out = _tracecache.call(_compare_core, tuple(jnp.asarray(x.ravel()) for x in (d, s, m, e)))
    out = {k: np.asarray(v) for k, v in out.items()}
    out.update(delta=d.ravel(), noise_multiplier=s.ravel(), num_rounds=m.ravel(), num_epochs=e.ravel())
    return out


# ------------------------------------------------------------------------------------------------
# compare --all-samplers: four samplers at matching settings, each accounted by jaxdp.account
# ------------------------------------------------------------------------------------------------

def sampler_events(sigma, rounds, epochs):
    """The four events of M rounds per epoch, E epochs, T = E*M steps (each example used E times,
    in expectation for Poisson): E reshuffled epochs, balls-in-bins with cycle length M, E of T
    steps by random allocation, and T Poisson steps at q = 1/M (``docs/interop.md``)."""
    from ..events import BallsInBins, Gaussian, PoissonSampled, RandomAllocation, SelfComposed, Shuffled

    g, m, e = Gaussian(float(sigma)), int(rounds), int(epochs)
    return dict(reshuffled=SelfComposed(Shuffled(g, m), e), balls_in_bins=BallsInBins(g, e * m, m),
                k_of_t=RandomAllocation(g, e, e * m), poisson=SelfComposed(PoissonSampled(1.0 / m, g), e * m))


def samplers(delta, cases, progress=None):
    """Certified eps(delta) bracket of each sampler of :func:`sampler_events` for each ``(sigma, M, E)``.

    Each value is ``jaxdp.account(event).epsilon(delta)`` itself, called eagerly (not batched):
    balls-in-bins and random allocation fix their counts statically, so each (M, E) compiles its
    own program; E reshuffled epochs and Poisson compile once.  Returns ``eps_<sampler>`` (upper
    end) and ``eps_<sampler>_lower``, one value per case."""
    from .. import accountant

    out = {}
    for s, m, e in cases:
        for k, event in sampler_events(s, m, e).items():
            b = accountant.account(event).epsilon(float(delta))
            out.setdefault(f"eps_{k}", []).append(float(b.upper))
            out.setdefault(f"eps_{k}_lower", []).append(float(b.lower))
        if progress is not None:
            progress.update()
    return {k: np.asarray(v, float) for k, v in out.items()}
