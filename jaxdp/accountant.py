r"""One accountant for every event: ``account(event)`` -> certified eps(delta), delta(eps), f(a).

:func:`account` flattens an event (:mod:`jaxdp.events`) into ``(mechanism, count)`` components and
composes them with :func:`jaxdp.core.pld.compose` once per adjacency direction (one traced copy run
for both, :func:`jaxdp.core.pld.compose_directions`): every component is discretised once
(connect-the-dots) and raised to its count by FFT, so a schedule of ``Composed`` ``SelfComposed``
pieces costs one FFT product per direction whatever the counts.  A single
component on a two-stage grid (the default, ``size >= 2**18``) is composed in two stages.

Every number is a certified :class:`~jaxdp.core.pld.Bracket` (``lower <= truth <= upper``) whose
``value`` is the pessimistic end (``upper`` for epsilon and delta, ``lower`` for the trade-off
curve).  Under ``neighboring="add_remove"`` both directions (remove, add) are composed and the worse
is reported: for eps and delta the larger, for the curve the convex hull of the minimum (the curve
valid for every ordered pair of neighbours).

``epsilon(delta)`` places the lattice with tails relative to delta on two-stage grids (per step
``1e-3 delta / T``, window ``1e-7 delta``; the presets :mod:`jaxdp.poisson` use the same rule); every mass they leave
out is accounted, so this is sound for any delta and only narrows the bracket.

Everything is a pure function of the event's numbers (traced): ``jax.jit``, ``jax.vmap`` and
``jax.grad`` go through ``account(event).epsilon(delta).value``.

Example::

    >>> import jaxdp
    >>> from jaxdp.events import Composed, Gaussian, PoissonSampled, SelfComposed
    >>> schedule = Composed((SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 500),
    ...                      SelfComposed(PoissonSampled(0.02, Gaussian(1.5)), 300)))
    >>> b = jaxdp.account(schedule).epsilon(1e-5)  # doctest: +SKIP
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ._config import jit
from . import _config  # noqa: F401  (float64)
from . import events as _events
from ._batch import broadcast_map
from ._validate import check, check_choice, nan_where_invalid
from .core import pld as _pld
from .core import tradeoff as _tf
from .core.tradeoff import curve_from_profile
from .events import UnsupportedEventError, supports
from ._pytree import pytree_dataclass

Bracket = _pld.Bracket
DIRECTIONS = ("remove", "add")

# eps(delta) knows delta: on two-stage grids (the default, size >= 2^18) a per-step tail of
# 1e-3 delta / T and a window tail of 1e-7 delta (both masses are accounted pessimistically, so they
# move delta by ~1e-3 relative, about 1e-4 relative in eps) narrow the lattice 2-3x compared with
# the absolute defaults (1e-20, 1e-17), which is what brings the bracket width under 1% for large
# T; one-stage grids (smaller sizes, or Grid(stages=1)) keep the absolute tails, and with them the
# tightest upper value (the speed benchmark measures that configuration)
_TAIL_PER_DELTA = 1e-3
_WINDOW_TAIL_PER_DELTA = 1e-7


def _flat(event, neighboring):
    comps = _events.components(event, neighboring)
    ok = jnp.asarray(True)
    for _, _, o in comps:
        ok = ok & o
    return [(m, k) for m, k, _ in comps], ok


def _plds(comps, grid, delta=None, directions=DIRECTIONS):
    # tabulate each law once for both directions (compose's own prepare() is then a no-op): half
    # the program to compile for the tabulated laws (shuffled)
    comps = [(m.prepare(), k) for m, k in comps]
    kw = {}
    if delta is not None and grid.num_stages() == 2:
        steps = sum(k.astype(jnp.float64) for _, k in comps)
        kw = dict(
            tail=jnp.maximum(_TAIL_PER_DELTA * delta / jnp.maximum(steps, 1.0), grid.tail),
            window_tail=jnp.maximum(_WINDOW_TAIL_PER_DELTA * delta, grid.window_tail),
        )
    return _pld.compose_directions(comps, grid, directions, **kw)


def composed_plds(event, *, grid, delta=None, directions=DIRECTIONS, neighboring: str = "add_remove") -> _pld.PLD:
    """The certified composed PLDs of ``event``, one per direction, stacked on a leading axis.

    The composition behind every :class:`Account` conversion, for code that converts the PLDs
    itself (the presets :mod:`jaxdp.poisson` and :mod:`jaxdp.shuffle` add their closed-form guards
    on top).  ``delta``: place the lattice with tails relative to it (the eps(delta) rule of the
    module docstring); ``None``: the grid's absolute tails.  Traceable; the event's validity flags
    are not applied (the caller validates), and the grid is static.
    """
    comps, _ = _flat(event, neighboring)
    return _plds(comps, grid, delta, tuple(directions))


def _worst(plds, fn):
    """The worse direction's ``fn(pld)`` (the larger), over a :func:`_plds` stack."""
    return jax.tree_util.tree_map(lambda x: jnp.max(x, axis=0), _pld.map_directions(fn, plds))


def _gdp_mu(comps):
    """mu of a Gaussian trade-off below the truth (mu-GDP composes exactly), ``inf`` if none is known.

    Only the optimistic ends of brackets are clipped with it (eps and delta lower ends down, the
    curve's upper end up), so it can correct a bracket end that crossed the truth but never moves a
    reported value: e.g. a shuffled event at delta = 1e-12, whose discretised lower end lay above the
    Gaussian upper bound eps_{G_{1/sigma}}(delta) on the truth."""
    mu2 = sum(k.astype(jnp.float64) * jnp.asarray(m.gdp_mu(), jnp.float64) ** 2 for m, k in comps)
    return jnp.sqrt(mu2)


def _below_gauss(lo, gauss_value, x, mu):
    """``lo`` lowered to the G_mu value ``gauss_value(x, mu)`` where mu is a finite certificate."""
    ok = jnp.isfinite(mu) & (mu > 0)
    g = gauss_value(x, jnp.where(ok, mu, 1.0))
    return jnp.where(ok & jnp.isfinite(g), jnp.minimum(lo, g), lo)


@functools.partial(jit, static_argnames=("neighboring", "grid", "with_lower"))
def _epsilon_core(event, delta, ok_delta, neighboring, grid, with_lower=True):
    # with_lower=False: the upper end only (lower = NaN), a program without the Hoeffding
    # conversion and the Gaussian clip, for callers that report one number (the adapters)
    comps, ok = _flat(event, neighboring)
    ok = ok & ok_delta
    if not comps:  # nothing ran: perfectly private
        return nan_where_invalid(jnp.zeros_like(delta), ok), nan_where_invalid(jnp.zeros_like(delta), ok)

    def one(d):
        ps = _plds(comps, grid, d)
        # eps >= 0 by convention (delta(0) <= delta: the guarantee holds at eps = 0)
        if not with_lower:
            return jnp.full_like(d, jnp.nan), jnp.maximum(_worst(ps, lambda p: p.epsilon_upper(d)), 0.0)
        up, lo = _worst(ps, lambda p: (p.epsilon_upper(d), p.epsilon_lower(_pld.lower_bound_delta(d))))
        up, lo = jnp.maximum(up, 0.0), jnp.maximum(lo, 0.0)
        return _below_gauss(lo, _tf.gaussian_epsilon, d, _gdp_mu(comps)), up

    lo, up = broadcast_map(one, jnp.where(ok_delta, delta, 1e-5))
    return nan_where_invalid(lo, ok), nan_where_invalid(up, ok)


@functools.partial(jit, static_argnames=("neighboring", "grid", "with_lower"))
def _delta_core(event, epsilon, ok_eps, neighboring, grid, with_lower=True):
    comps, ok = _flat(event, neighboring)
    ok = ok & ok_eps
    if not comps:
        return nan_where_invalid(jnp.zeros_like(epsilon), ok), nan_where_invalid(jnp.zeros_like(epsilon), ok)
    e = jnp.where(ok_eps, epsilon, 1.0)
    if not with_lower:  # the upper end only, as in _epsilon_core
        return jnp.full_like(e, jnp.nan), nan_where_invalid(_worst(_plds(comps, grid), lambda p: p.delta_upper(e)), ok)
    up, lo = _worst(_plds(comps, grid), lambda p: (p.delta_upper(e), p.delta_lower(e)))
    gauss_delta = lambda x, m: jnp.clip(_tf.gaussian_delta_unchecked(x, m), 0.0, 1.0)  # noqa: E731
    lo = _below_gauss(lo, gauss_delta, e, _gdp_mu(comps))
    return nan_where_invalid(lo, ok), nan_where_invalid(up, ok)


@functools.partial(jit, static_argnames=("neighboring", "grid", "num_eps"))
def _tradeoff_core(event, a, ok_a, neighboring, grid, num_eps):
    comps, ok = _flat(event, neighboring)
    ok = ok & ok_a
    if not comps:
        return nan_where_invalid(1.0 - a, ok), nan_where_invalid(1.0 - a, ok)
    ps = _plds(comps, grid)
    # a curve valid for both ordered pairs is conv(min(f_r, f_a)), whose profile is
    # max(delta_r, delta_a); its sup over a finite eps grid keeps it a lower bound
    hi = _worst(ps, lambda p: p.losses[-1])
    eps = jnp.concatenate(
        [-jnp.geomspace(1e-6, 1.0, num_eps // 4)[::-1] * hi, jnp.linspace(0.0, 1.0, num_eps - num_eps // 4) * hi]
    )
    prof, up = _pld.map_directions(lambda p: (p.delta_upper(eps), p.tradeoff_upper(a)), ps)
    lo = curve_from_profile(jnp.max(prof, axis=0), eps, a)
    up = jnp.min(up, axis=0)
    mu = _gdp_mu(comps)  # the truth is >= G_mu: an upper end below it is raised to it
    up = jnp.maximum(up, jnp.where(jnp.isfinite(mu), _tf.gaussian(a, jnp.where(jnp.isfinite(mu), mu, 0.0)), 0.0))
    return nan_where_invalid(lo, ok), nan_where_invalid(up, ok)


@functools.partial(jit, static_argnames=("neighboring", "grid"))
def _pld_core(event, neighboring, grid):
    # both directions in one program (one traced composition, compose_directions): asking for the
    # second direction reuses it instead of compiling the laws again
    comps, _ = _flat(event, neighboring)
    return _plds(comps, grid)


@pytree_dataclass(static=("neighboring", "grid"))
class Account:
    """The privacy of one event: certified conversions (each a :class:`Bracket`).

    Built by :func:`account`; a pytree (the event's numbers are its leaves), so it can cross
    ``jit`` / ``vmap`` boundaries.  Each method composes the event's laws afresh (under ``jit`` the
    compiled program is cached per event structure and grid).
    """

    event: object
    neighboring: str = "add_remove"
    grid: _pld.Grid = _pld.DEFAULT_GRID

    def epsilon(self, delta) -> Bracket:
        """Certified eps(delta) (smallest eps with delta(eps) <= delta, worse direction); ``value = upper``."""
        d, ok = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        lo, up = _epsilon_core(self.event, d, ok, self.neighboring, self.grid)
        return Bracket(lower=lo, upper=up, value=up)

    def epsilon_upper(self, delta):
        """The certified upper end of :meth:`epsilon` alone (the same number as its ``value``).

        A smaller program to compile than the bracket (no lower bound is computed): for callers
        that report one pessimistic number, such as the dp_accounting adapter."""
        d, ok = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        return _epsilon_core(self.event, d, ok, self.neighboring, self.grid, with_lower=False)[1]

    def delta(self, epsilon) -> Bracket:
        """Certified hockey-stick delta(eps) (worse direction); ``value = upper``."""
        e, ok = check("epsilon", epsilon)
        lo, up = _delta_core(self.event, e, ok, self.neighboring, self.grid)
        return Bracket(lower=lo, upper=up, value=up)

    def delta_upper(self, epsilon):
        """The certified upper end of :meth:`delta` alone (its ``value``), as :meth:`epsilon_upper`."""
        e, ok = check("epsilon", epsilon)
        return _delta_core(self.event, e, ok, self.neighboring, self.grid, with_lower=False)[1]

    def tradeoff(self, a, *, num_eps: int = 4096) -> Bracket:
        """Certified trade-off curve f(a) valid for both directions; ``value = lower`` (the f-DP guarantee)."""
        x, ok = check("a", a, lo=0.0, hi=1.0)
        lo, up = _tradeoff_core(self.event, x, ok, self.neighboring, self.grid, int(num_eps))
        return Bracket(lower=lo, upper=up, value=lo)

    def pld(self, direction: str = "remove") -> _pld.PLD:
        """The composed certified PLD of one direction (``"remove"`` or ``"add"``), absolute tails."""
        check_choice("direction", direction, DIRECTIONS)
        if not _events.components(self.event, self.neighboring):
            raise ValueError("the event runs nothing: it has no privacy-loss distribution to show")
        i = DIRECTIONS.index(direction)
        return jax.tree_util.tree_map(lambda x: x[i], _pld_core(self.event, self.neighboring, self.grid))


def account(event, *, neighboring: str = "add_remove", grid=None) -> Account:
    """The certified privacy of ``event`` (a :mod:`jaxdp.events` tree) under ``neighboring``.

    Args:
      event: what was run (``Gaussian``, ``Laplace``, ``EpsilonDelta``, ``PoissonSampled``,
        ``Shuffled``, ``SelfComposed``, ``Composed`` and any registered event).
      neighboring: ``"add_remove"`` (add or remove one example; both directions, the worse is
        reported) or ``"replace_one"``.
      grid: a static :class:`~jaxdp.core.pld.Grid`; ``None``: the default of the event's types
        (``jaxdp.events.SHUFFLED_GRID`` when it contains ``Shuffled``) or ``DEFAULT_GRID``.

    Returns:
      An :class:`Account` with ``epsilon(delta)``, ``delta(epsilon)``, ``tradeoff(a)``.

    Raises:
      UnsupportedEventError: an event without a sound law under ``neighboring`` (named, with why).
      ValueError: a concrete invalid number (traced ones give NaN results instead).
    """
    check_choice("neighboring", neighboring, _events.NEIGHBORING)
    _events.components(event, neighboring)  # structure and (concrete) numbers, eagerly
    if grid is None:
        grid = _events.default_grid(event) or _pld.DEFAULT_GRID
    if not isinstance(grid, _pld.Grid):
        raise TypeError(f"grid must be a jaxdp.core.pld.Grid or None, got {type(grid).__name__}")
    return Account(event=event, neighboring=neighboring, grid=grid)


__all__ = ["Account", "Bracket", "UnsupportedEventError", "account", "composed_plds", "supports"]
