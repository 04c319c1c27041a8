"""Chernoff windows: log-MGFs of discrete pmfs and the bounds that place (and certify) the FFT window
of a composition (see :mod:`jaxdp.core.pld`, point 2)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from .. import _config  # noqa: F401  (float64)


def _log_mgf(pmf, losses, ts):
    logp = jnp.where(pmf > 0, jnp.log(jnp.where(pmf > 0, pmf, 1.0)), -jnp.inf)
    return jax.nn.logsumexp(logp[None, :] + ts[:, None] * losses[None, :], axis=1)


def _log_mgf_blocked(pmf, losses, ts, block: int = 16):
    """Upper bound on log E[e^{tL}] from block sums placed at the block's top (t>0) or bottom (t<0)."""
    n = pmf.shape[0]
    nb = n // block
    pb = pmf[: nb * block].reshape(nb, block).sum(axis=1)
    lb = losses[: nb * block].reshape(nb, block)
    lo, hi = lb[:, 0], lb[:, -1]
    logp = jnp.where(pb > 0, jnp.log(jnp.where(pb > 0, pb, 1.0)), -jnp.inf)
    at = jnp.where(ts[:, None] > 0, hi[None, :], lo[None, :])
    return jax.nn.logsumexp(logp[None, :] + ts[:, None] * at, axis=1)


def _chernoff_ts(scale, num):
    half = num // 2
    mags = jnp.logspace(-3.0, 4.0, half) / scale
    return jnp.concatenate([-mags[::-1], mags])


def _chernoff_window(K, ts, log_tail):
    """[x_L, x_R] with P(S < x_L), P(S > x_R) <= e^{log_tail} by Chernoff, from K(t) of the sum."""
    pos = ts > 0
    xr = jnp.where(pos, (K - log_tail) / jnp.where(pos, ts, 1.0), jnp.inf)
    xl = jnp.where(~pos, (K - log_tail) / jnp.where(pos, 1.0, ts), -jnp.inf)
    return jnp.max(xl), jnp.min(xr)


def _chernoff_bound(K, ts, x, upper: bool):
    """log of min_t e^{-t x + K(t)} over t > 0 (upper tail P(S >= x)) or t < 0 (P(S <= x))."""
    sel = ts > 0 if upper else ts < 0
    vals = jnp.where(sel, -ts * x + K, jnp.inf)
    return jnp.minimum(jnp.min(vals), 0.0)




def _log_mgf_mm(pmf, losses, ts, block: int = 128):
    """log E[e^{tL}] of a (non-negative) pmf on a uniform lattice, as block matrix products.

    Cell ``b * block + i`` contributes ``p e^{t h (i - r)}`` times ``e^{t l_ref}``, with the reference
    cell r at the block's top for t > 0 and its bottom for t < 0, so every factor is <= 1 (no
    overflow).  A product that underflows loses less than 2^-1022 (p <= 1) and at most p, so each
    block sum is raised by ``min(block mass, block * 2^-1022)``: the result is never below the
    exact value (up to rounding), and Chernoff bounds built on it stay valid.  The cost is one
    (n/block, block) x (block, len(ts)) product instead of ``n * len(ts)`` exponentials.
    """
    n = pmf.shape[-1]
    if n % block:
        return _log_mgf(pmf, losses, ts)
    nb = n // block
    h = losses[1] - losses[0]
    pos = jnp.arange(block, dtype=jnp.float64)
    ref = jnp.where(ts > 0, block - 1.0, 0.0)
    fac = jnp.exp(ts[None, :] * h * (pos[:, None] - ref[None, :]))
    pb = jnp.maximum(pmf, 0.0).reshape(nb, block)
    S = jnp.dot(pb, fac, precision=lax.Precision.HIGHEST)
    S = S + jnp.minimum(jnp.sum(pb, axis=1), block * 2.0**-1022)[:, None]
    lref = losses.reshape(nb, block)[:, :1] + ref[None, :] * h
    logS = jnp.where(S > 0, jnp.log(jnp.where(S > 0, S, 1.0)), -jnp.inf)
    return jax.nn.logsumexp(logS + ts[None, :] * lref, axis=0)


def _log_mgf_exact(pmf, losses, ts):
    """log E[e^{tL}] at a few t, referenced to the support's end (no log of the pmf, no overflow).

    ``K(t) = t r + log sum_j p_j e^{t (l_j - r)}`` with r the highest (t > 0) or lowest (t < 0)
    lattice point carrying mass, so every factor on the support is <= 1; products that underflow
    lose less than 2^-1022 each, covered by adding ``min(mass, n 2^-1022)``.  Never below the exact
    value (up to rounding): valid for the certified Chernoff bounds.
    """
    n = pmf.shape[-1]
    p = jnp.maximum(pmf, 0.0)
    pos = p > 0
    any_pos = jnp.any(pos)
    top = jnp.max(jnp.where(pos, losses, -jnp.inf))
    bot = jnp.min(jnp.where(pos, losses, jnp.inf))
    ref = jnp.where(any_pos, jnp.where(ts > 0, top, bot), 0.0)
    fac = jnp.exp(jnp.minimum(ts[:, None] * (losses[None, :] - ref[:, None]), 0.0))
    S = jnp.dot(fac, p, precision=lax.Precision.HIGHEST) + jnp.minimum(jnp.sum(p), n * 2.0**-1022)
    return jnp.where(any_pos, ts * ref + jnp.log(S), -jnp.inf)



def _near_optimum(K, ts, x_lo, x_hi, num: int = 5):
    """A few t around the best Chernoff exponents (from a cheap K) for P(S < x_lo) and P(S > x_hi)."""
    t_up = ts[jnp.argmin(jnp.where(ts > 0, -ts * x_hi + K, jnp.inf))]
    t_dn = ts[jnp.argmin(jnp.where(ts < 0, -ts * x_lo + K, jnp.inf))]
    mult = jnp.geomspace(1.0 / 4.0, 4.0, num)
    return jnp.concatenate([t_dn * mult, t_up * mult])


def _outside_bound(Kx, tx, Kb, ts, x_lo, x_hi):
    """Chernoff bound on the mass below x_lo plus the mass above x_hi (any t gives a valid bound)."""
    lb = jnp.minimum(_chernoff_bound(Kx, tx, x_lo, upper=False), _chernoff_bound(Kb, ts, x_lo, upper=False))
    ub = jnp.minimum(_chernoff_bound(Kx, tx, x_hi, upper=True), _chernoff_bound(Kb, ts, x_hi, upper=True))
    return jnp.exp(lb) + jnp.exp(ub)
