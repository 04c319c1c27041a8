"""Conversions on a discrete loss pmf: delta(eps), eps(delta), trade-off curves, and the FFT-free
Chernoff bound on delta from the log-MGF (see :mod:`jaxdp.core.pld`, points 1 and 3)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from .. import _config  # noqa: F401  (float64)


# ------------------------------------------------------------------------------------------------
# the FFT-free Chernoff bound on delta (the optimal conversion of a moment bound)
# ------------------------------------------------------------------------------------------------
#
# With x = L - eps, (1 - e^{-x})_+ <= c_t e^{t x} for every t > 0, c_t = max_x (1 - e^{-x}) e^{-t x}
# = (1/(1+t)) (t/(1+t))^t, so delta(eps) = E_A[(1 - e^{eps - L})_+] <= P_A(L = inf)
# + c_t e^{K(t) - t eps} with K(t) = log E_A[e^{tL}; L finite].  For a composition K adds over the
# steps (the finite part of a product is the product of the finite parts).  K is evaluated on the
# single-step CTD pmfs, which dominate the true pairs, so the bound holds for the true composition.

_MGF_NUM = 96
_MGF_MARGIN = 1e-12  # relative, on the exponent and on eps: covers the rounding of K


def _mgf_orders(scale):
    """Positive orders t for the Chernoff bound: 1e-3 .. 1e4 over the loss's standard deviation."""
    return jax.lax.stop_gradient(jnp.logspace(-3.0, 4.0, _MGF_NUM) / scale)


def _log_c(t):
    return -jnp.log1p(t) + t * (jnp.log(t) - jnp.log1p(t))


def _chernoff_delta(K, ts, epsilon, inf_mass):
    e = jnp.asarray(epsilon, dtype=jnp.float64)
    v = jnp.min(_log_c(ts) + K - ts * e[..., None], axis=-1)
    v = v + _MGF_MARGIN * jnp.abs(v)
    return inf_mass + jnp.exp(jnp.minimum(v, 0.0))


def _chernoff_eps(K, ts, delta, inf_mass):
    d = jnp.asarray(delta, dtype=jnp.float64) - inf_mass
    logd = jnp.log(jnp.where(d > 0, d, 1.0))
    e = jnp.min((_log_c(ts) + K - logd[..., None]) / ts, axis=-1)
    e = e + _MGF_MARGIN * jnp.abs(e)
    return jnp.where(d > 0, e, jnp.inf)


def _mu_h(h):
    """max over y in [0, h] of E[rounded] - y for the e^{-y}-preserving split (about h^2/8); 0 at h = 0."""
    hs = jnp.where(h > 0, h, 1.0)
    em = -jnp.expm1(-hs)
    mu = (hs - em) / em + jnp.log(em / hs)
    return jnp.where(h > 0, jnp.maximum(mu, 0.0), 0.0)


# ------------------------------------------------------------------------------------------------
# conversions on a discrete pmf
# ------------------------------------------------------------------------------------------------


def _spacing(losses):
    """The lattice spacing from its end points (l_1 - l_0 loses ~|l_0| 2^-52 absolute: a relative
    error 1e-12 at h ~ 6e-4 that shifts far cells' weights e^{-l} by 1e-11)."""
    n = losses.shape[-1]
    return (losses[-1] - losses[0]) / (n - 1) if n > 1 else jnp.asarray(1.0, losses.dtype)


def _tail_sums(c, losses, block: int = 128):
    """A_j = sum_{i > j} c_i and P_j = e^h R_j = sum_{i > j} c_i e^{-(l_i - l_{j+1})}.

    (R_j = sum_{i > j} c_i e^{l_j - l_i} is the quantity of the hockey-stick sums; it is returned
    scaled by e^h so that it neither underflows at large spacings h nor needs e^{+h} later.)

    Blockwise: inside each block of ``block`` cells a product with the matrix
    ``M_{ji} = e^{-(i - j - 1) h}`` (i > j), whose entries are exact exponentials of non-positive
    numbers; across blocks the recurrence ``E_b = F_{b+1} + e^{-B h} E_{b+1}`` by a short
    associative scan.  Only exponentials of non-positive numbers appear (the previous
    ``e^{+(B-1-i) h}`` rescaling overflowed once ``block * h > 709``, i.e. at loss ranges above
    ~1.8e5 on 2^18 cells, and lost the whole tail), so nothing overflows at any spacing; terms that
    underflow are below 2^-1022 of a neighbour.  Powers of a rounded ``e^{-h}`` would carry a
    relative error ``k 2^-52`` at distance k (4e-13 at h = 6e-4), hence the exact matrix.  All
    terms are positive, so this is stable.
    """
    n = c.shape[-1]
    h = _spacing(losses)
    a_rev = jnp.cumsum(c[::-1])[::-1]  # sum_{i >= j}
    A = jnp.concatenate([a_rev[1:], jnp.zeros((1,), c.dtype)])
    B = block if n % block == 0 else 1
    nb = n // B
    cb = c.reshape(nb, B)
    pos = jnp.arange(B, dtype=c.dtype)
    gap = pos[None, :] - pos[:, None] - 1.0  # (j, i): i - j - 1
    M = jnp.where(gap >= 0, jnp.exp(-jnp.maximum(gap, 0.0) * h), 0.0)
    S = jnp.dot(cb, M.T, precision=lax.Precision.HIGHEST)  # S[b, j] = sum_{i > j in block} ...
    # across blocks: E_b = P at the last cell of block b = F_{b+1} + e^{-B h} E_{b+1}, with
    # F_{b+1} = sum_{i in block b+1} c_i e^{-(i - first) h}
    F = cb[:, 0] + jnp.exp(-h) * S[:, 0]

    def combine(x, y):
        # (reverse scan: x holds the maps to the right, applied first, then y)
        mx, bx = x
        my, by = y
        return mx * my, bx * my + by

    m = jnp.full((nb,), jnp.exp(-B * h), dtype=c.dtype)
    v = jnp.concatenate([F[1:], jnp.zeros((1,), c.dtype)])
    _, E = jax.lax.associative_scan(combine, (m, v), reverse=True)
    P = S + E[:, None] * jnp.exp(-(B - 1 - pos) * h)[None, :]
    return A, P.reshape(n)


def _delta_of(c, losses, epsilon, rel=0.0):
    """delta(eps) = sum_i c_i (1 - e^{eps - l_i})_+ for a pmf on the lattice, vectorised over eps.

    On the segment eps in [l_j, l_{j+1}): delta = A_j - e^{eps - l_{j+1}} P_j with
    eps - l_{j+1} in [-h, 0): no overflow at any eps or spacing (eps far above the lattice gave
    e^{eps - l} * 0 = NaN before).
    """
    eps = jnp.asarray(epsilon, dtype=jnp.float64)
    flat = eps.reshape(-1)
    A, P = _tail_sums(c, losses)
    h = _spacing(losses)
    l0 = losses[0]
    n = c.shape[-1]
    j, Aj = _segment(A, jnp.sum(c), losses, flat)
    P_below = c[0] + jnp.exp(-h) * P[0]  # P for a virtual point l_{-1} = l_0 - h
    Pj = jnp.where(j >= 0, P[jnp.maximum(j, 0)], P_below)
    # j = -1 covers every eps below the lattice (all atoms above eps); j = n-1 every eps at or above
    # the top point (no atom above: A = P = 0)
    x = jnp.minimum(flat - (l0 + (j + 1) * h), 0.0)
    val = Aj - jnp.exp(x) * Pj
    val = jnp.where(j >= n - 1, 0.0, val)
    # (+ rel times the mass above eps: the relative float allowance of :func:`_conv_rel`)
    val = jnp.maximum(val, 0.0) + rel * jnp.where(j >= n - 1, 0.0, Aj)
    return val.reshape(eps.shape)


def _eps_of(c, losses, h, target, rel=0.0):
    """Smallest eps with sum_i c_i (1 - e^{eps - l_i})_+ + rel * A(eps) <= target (vectorised).

    ``A(eps)`` is the mass above eps (``rel``: the relative float allowance of :func:`_conv_rel`).
    The plain problem (``rel = 0``) is solved exactly for the discrete pmf (piecewise closed form);
    with ``rel > 0`` a second solve at ``target - rel * A(eps_1)`` is sound because A is
    non-increasing and the second answer is not below the first.  Differentiable in c and target.
    Returns +inf when the target is not positive and the left end of the lattice when it is at
    least the mass.
    """
    t = jnp.asarray(target, dtype=jnp.float64)
    flat = t.reshape(-1)
    A, P = _tail_sums(c, losses)
    eps = _eps_from_sums(A, P, losses, h, flat)
    if rel:
        _, a1 = _segment(A, jnp.sum(c), losses, jnp.where(jnp.isfinite(eps), eps, losses[0]))
        eps = _eps_from_sums(A, P, losses, h, flat - rel * a1)
    return eps.reshape(t.shape)


def _eps_from_sums(A, P, losses, h, flat):
    D = A - jnp.exp(-h) * P  # delta at the lattice points, non-increasing
    n = A.shape[-1]
    # first index j with D_j <= target  ->  eps in [l_{j-1}, l_j]
    # D is non-increasing: count of entries > target
    j = jnp.searchsorted(-D, -flat, side="left")
    jm = jnp.clip(j - 1, 0, n - 1)
    # on [l_{jm}, l_{jm+1}]: A_jm - e^{eps - l_{jm+1}} P_jm = target
    Aj, Pj = A[jm], P[jm]
    ratio = (Aj - flat) / jnp.where(Pj > 0, Pj, 1.0)
    eps = losses[jm] + h + jnp.log(jnp.where(ratio > 0, ratio, 1.0))
    eps = jnp.clip(eps, losses[jm], losses[jm] + h)
    eps = jnp.where(j <= 0, losses[0], eps)
    eps = jnp.where(flat <= 0.0, jnp.inf, eps)
    return jnp.where(jnp.isnan(flat), jnp.nan, eps)


def _segment(A, total, losses, eps):
    """(j, mass above eps): eps in [l_j, l_{j+1}) (j = -1 below the lattice, n-1 at or above its top)
    and A_j = sum_{i > j} c_i (the total mass for j = -1)."""
    n = A.shape[-1]
    j = jnp.clip(jnp.floor((eps - losses[0]) / _spacing(losses)).astype(jnp.int64), -1, n - 1)
    return j, jnp.where(j >= 0, A[jnp.maximum(j, 0)], total)


def _conv_rel(n: int) -> float:
    """Relative float allowance of a conversion on n cells, as a fraction of the mass above eps.

    Each cell of a CTD pmf is a difference of survival values (error ~ 2^-52 times the survival
    value, i.e. the mass above the cell), and the tail sums add n positive terms: both errors are
    at most ~n 2^-52 times the mass above eps.  ``n 2^-47`` (32x that) is added on the pessimistic
    side.  Relative, not absolute: it never puts a floor under small deltas.  Not a proof (float
    rounding never is here; see the module docstring).
    """
    return float(n) * 2.0**-47


def _curve_vertices(c, losses, inf_mass):
    # reject iff loss >= l_j:  alpha_j = B(L >= l_j) = sum_{i>=j} c_i e^{-l_i}
    logb = jnp.where(c > 0, jnp.log(jnp.where(c > 0, c, 1.0)) - losses, -jnp.inf)
    bmass = jnp.exp(jnp.minimum(logb, 700.0))
    alpha = jnp.cumsum(bmass[::-1])[::-1]
    beta = (1.0 - inf_mass) - jnp.cumsum(c[::-1])[::-1]
    # vertices in increasing alpha: (0, 1 - inf_mass), then j = n-1 ... 0
    xs = jnp.concatenate([jnp.zeros((1,)), alpha[::-1]])
    ys = jnp.concatenate([(1.0 - inf_mass)[None], beta[::-1]])
    return xs, ys


def _curve_of(c, losses, inf_mass, a):
    """Trade-off curve T(B, A) of the pair whose A-law is c (+ inf_mass at +inf): piecewise linear."""
    a = jnp.asarray(a, dtype=jnp.float64)
    xs, ys = _curve_vertices(c, losses, inf_mass)
    f = jnp.interp(a, xs, ys, right=0.0)
    return jnp.maximum(f, 0.0)
