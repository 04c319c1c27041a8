"""A composed certified PLD and its brackets (:class:`PLD`, :class:`Bracket`; see :mod:`jaxdp.core.pld`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import _config  # noqa: F401  (float64)
from .._pytree import pytree_dataclass
from ._conversions import (_chernoff_delta, _chernoff_eps, _conv_rel, _curve_of, _curve_vertices, _delta_of, _eps_of,
                           _mu_h)
from .piecewise import PiecewiseLinear


def lower_bound_delta(delta):
    """The delta at which eps lower bounds are evaluated: ``delta (1 + 1e-9)`` (``delta`` itself when
    that reaches 1).  eps(delta) is non-increasing, so a lower bound there is a lower bound at
    ``delta``; the margin keeps lower ends from flipping across a jump of eps(delta) that float64
    cannot resolve (e.g. delta = q TV of one subsampled step, where eps jumps from ~5400 to 0)."""
    up = delta * (1.0 + 1e-9)
    return jnp.where(up < 1.0, up, delta)


@pytree_dataclass
class Bracket:
    """A certified value: the truth lies in ``[lower, upper]``; ``value`` is the pessimistic end."""

    lower: jax.Array
    upper: jax.Array
    value: jax.Array


@pytree_dataclass(static=("eta", "eta_abs"))
class PLD:
    """A composed, certified privacy-loss distribution (law of the loss under A).

    pmf: CTD pmf of the composed loss on the lattice ``(offset + arange(size)) * h`` (may contain
        float rounding noise of order 1e-17).
    inf_mass: A-mass at loss +inf (composed).
    alias: Chernoff bound on the composed mass outside the window (added pessimistically).
    tail_mass: total single-step mass outside the grids, times the number of steps.
    steps: number of composed steps k (for the Hoeffding bracket).
    h_fine, steps_fine: two-stage composition only (else 0): the fine lattice spacing and the
        number of steps rounded on it; the ``steps`` rounding errors on ``h`` are then those of
        the second stage (see :func:`compose`).
    """

    pmf: jax.Array
    offset: jax.Array
    h: jax.Array
    inf_mass: jax.Array
    alias: jax.Array
    tail_mass: jax.Array
    steps: jax.Array
    h_fine: jax.Array = 0.0
    steps_fine: jax.Array = 0.0
    eta: float = 1e-3
    eta_abs: float = 1e-14
    # an upper bound on the log-MGF of the composed finite loss at positive orders (computed from
    # the single-step CTD pmfs, no FFT): a second, FFT-free bound on delta (:meth:`delta_upper`)
    mgf_t: jax.Array = None
    mgf_K: jax.Array = None
    mgf_inf: jax.Array = None  # P(some step's loss is +inf): the atom the Chernoff bound adds

    @property
    def losses(self):
        return (self.offset + jnp.arange(self.pmf.shape[-1], dtype=jnp.float64)) * self.h

    # ---- the Hoeffding shift for the lower bound ---------------------------------------------
    def _shift(self, eta):
        """(shift, failure probability) of the lower bound.

        Each interior rounding error lies in [-h, h] (deterministic: the k-fold sum moves by at most
        k h, failure probability 0) and has conditional mean in [0, mu_h] (Hoeffding: k mu_h + t with
        failure probability eta).  Both are valid; the smaller shift is used.
        """
        h, k = self.h, self.steps
        h1, k1 = jnp.asarray(self.h_fine, jnp.float64), jnp.asarray(self.steps_fine, jnp.float64)
        # (two stages: the errors of both roundings form one martingale-difference sequence,
        # k1 of range h1 and k of range h; Azuma-Hoeffding adds their squared ranges)
        t = jnp.sqrt((k * h**2 + k1 * h1**2) * jnp.log(1.0 / eta) / 2.0)
        s_h = k * _mu_h(h) + k1 * _mu_h(h1) + t
        s_d = k * h + k1 * h1
        det = s_d <= s_h
        return jnp.where(det, s_d, s_h), jnp.where(det, 0.0, eta)

    # ---- delta(eps) ---------------------------------------------------------------------------
    def delta_upper(self, epsilon):
        """The smaller of two upper bounds on delta(eps): the composed pmf's (+ its FFT allowance and
        a relative conversion allowance) and the Chernoff bound from the exact log-MGF (no FFT, so no
        absolute float allowance: it stays useful at deltas below the FFT's rounding level)."""
        c = jnp.maximum(self.pmf, 0.0)
        rel = _conv_rel(c.shape[-1])
        d = _delta_of(c, self.losses, epsilon, rel) + self.inf_mass + self.alias
        if self.mgf_K is not None:
            d = jnp.minimum(d, _chernoff_delta(self.mgf_K, self.mgf_t, epsilon, self.mgf_inf))
        return jnp.minimum(d, 1.0)

    def delta_lower(self, epsilon):
        s, eta = self._shift(self.eta_abs)
        v = _delta_of(self.pmf, self.losses, epsilon + s) + self.inf_mass
        return jnp.maximum(v - self.alias - self.tail_mass - eta, 0.0)

    # ---- eps(delta) ---------------------------------------------------------------------------
    def epsilon_upper(self, delta):
        """The smaller of the pmf's eps (see :meth:`delta_upper`) and the Chernoff eps."""
        c = jnp.maximum(self.pmf, 0.0)
        rel = _conv_rel(c.shape[-1])
        e = _eps_of(c, self.losses, self.h, delta - self.inf_mass - self.alias, rel)
        if self.mgf_K is not None:
            e = jnp.minimum(e, _chernoff_eps(self.mgf_K, self.mgf_t, delta, self.mgf_inf))
        return e

    def epsilon_lower(self, delta):
        # every failure level eta gives a valid lower bound (a smaller shift for a larger delta
        # target); the best of five levels around ``self.eta * delta`` is taken (one tail-sum pass)
        d = jnp.asarray(delta, dtype=jnp.float64)
        levels = self.eta * d[..., None] * jnp.array(_ETA_LEVELS)
        s, eta = self._shift(levels)
        target = d[..., None] - self.inf_mass + self.alias + self.tail_mass + eta
        return jnp.max(_eps_of(self.pmf, self.losses, self.h, target) - s, axis=-1)

    # ---- trade-off curve T(B, A): type II error of testing B (null) against A ---------------------
    def tradeoff_lower(self, a):
        """Pessimistic (lower) bound on the trade-off curve: a sound f-DP guarantee."""
        c = jnp.maximum(self.pmf, 0.0)
        f = _curve_of(c, self.losses, self.inf_mass, a)
        return jnp.clip(f - self.alias, 0.0, 1.0 - a)

    def curve(self, pessimistic: bool = True):
        """The composed curve as a :class:`~jaxdp.core.piecewise.PiecewiseLinear` (lower or upper bound)."""
        if pessimistic:
            xs, ys = _curve_vertices(jnp.maximum(self.pmf, 0.0), self.losses, self.inf_mass)
            return PiecewiseLinear(a=xs, f=ys - self.alias)
        s, eta = self._shift(self.eta_abs)
        xs, ys = _curve_vertices(self.pmf, self.losses, self.inf_mass)
        return PiecewiseLinear(a=xs * jnp.exp(s), f=ys + self.alias + self.tail_mass + eta)

    def tradeoff_upper(self, a):
        """Optimistic (upper) bound on the trade-off curve (the truth lies in between)."""
        s, eta = self._shift(self.eta_abs)
        f = _curve_of(self.pmf, self.losses, self.inf_mass, a * jnp.exp(-s))
        return jnp.clip(f + self.alias + self.tail_mass + eta, 0.0, 1.0 - a)


_ETA_LEVELS = (0.01, 0.1, 1.0, 10.0, 100.0)  # (a tuple: no device array at import time)
