r"""Couplings of two (weighted) empirical laws and Wasserstein distances.

1-D: the comonotone (quantile) coupling. For any cost :math:`h(x - x')` with :math:`h` convex it is
optimal, and it is the same for every noise scale and every alpha, so every 1-D condition in
:mod:`jaxdp.pufferfish.calibration` is evaluated on it. With cumulative weights
:math:`F_i, F_j` the coupling puts mass :math:`t_{k} - t_{k-1}` on
:math:`(F_i^{-1}(s), F_j^{-1}(s))`, :math:`s \in (t_{k-1}, t_k]`, where :math:`t` is the sorted
union of both cumulative-weight vectors; it has at most ``n + m`` atoms (static shape).

d > 1: any coupling :math:`\pi` gives a valid sufficient condition (Hoelder / joint convexity,
``docs/pufferfish.md``), so an approximate optimiser is sound as long as its output is an exact
coupling. :func:`sinkhorn` (log-domain entropic OT) and :func:`optimise_coupling` (Adam on logits,
projected by Sinkhorn) are followed by :func:`round_to_coupling` (Altschuler, Weed & Rigollet 2017,
Alg. 2), which returns a matrix with exactly the prescribed marginals.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from .._config import jit
from ._common import prepare_samples, nan_where_invalid


class Coupling1D(NamedTuple):
    """Atoms of the quantile coupling: pairs ``(x, y)`` with masses ``mass`` (sum 1)."""

    x: jax.Array
    y: jax.Array
    mass: jax.Array

    @property
    def diff(self):
        return self.x - self.y


def _cum(w):
    c = jnp.cumsum(w)
    # the last cumulative weight is exactly 1, so no spurious end segment appears
    return c.at[-1].set(1.0)


def quantile_coupling(x, y, wx=None, wy=None) -> Coupling1D:
    """Comonotone coupling of ``sum_k wx_k delta_{x_k}`` and ``sum_l wy_l delta_{y_l}``.

    jit / vmap-able; ``wx``, ``wy`` need not be normalised (they are). Output has ``n + m`` atoms,
    some with zero mass. Zero-weight inputs (padding) are allowed.
    """
    x = jnp.asarray(x, jnp.float64)
    y = jnp.asarray(y, jnp.float64)
    wx = jnp.ones_like(x) if wx is None else jnp.asarray(wx, jnp.float64)
    wy = jnp.ones_like(y) if wy is None else jnp.asarray(wy, jnp.float64)
    wx = wx / jnp.sum(wx)
    wy = wy / jnp.sum(wy)
    ox = jnp.argsort(x)
    oy = jnp.argsort(y)
    xs, wxs = x[ox], wx[ox]
    ys, wys = y[oy], wy[oy]
    cx, cy = _cum(wxs), _cum(wys)
    t = jnp.sort(jnp.concatenate([cx, cy]))
    mass = jnp.diff(jnp.concatenate([jnp.zeros(1), t]))
    mass = jnp.maximum(mass, 0.0)
    # the segment (t_{k-1}, t_k] lies in quantile cell searchsorted(c, t_k, 'left')
    ix = jnp.clip(jnp.searchsorted(cx, t, side="left", method="compare_all"), 0, x.shape[0] - 1)
    iy = jnp.clip(jnp.searchsorted(cy, t, side="left", method="compare_all"), 0, y.shape[0] - 1)
    return Coupling1D(xs[ix], ys[iy], mass)


def wasserstein_p(x, y, wx=None, wy=None, *, p=1.0):
    r""":math:`W_p = (\mathbb E_\pi |X - X'|^p)^{1/p}` on the quantile coupling (exact in 1-D)."""
    c = quantile_coupling(x, y, wx, wy)
    d = jnp.abs(c.diff)
    return jnp.sum(c.mass * d**p) ** (1.0 / p)


def wasserstein_1(x, y, wx=None, wy=None):
    return wasserstein_p(x, y, wx, wy, p=1.0)


def wasserstein_2(x, y, wx=None, wy=None):
    return wasserstein_p(x, y, wx, wy, p=2.0)


def wasserstein_inf(x, y, wx=None, wy=None):
    r""":math:`W_\infty = \max\{|x - x'| : \pi(x, x') > 0\}` on the quantile coupling (exact in 1-D)."""
    c = quantile_coupling(x, y, wx, wy)
    return jnp.max(jnp.where(c.mass > 0, jnp.abs(c.diff), 0.0))


def wasserstein_distances(samples_i, samples_j, *, weights_i=None, weights_j=None):
    """Validated ``dict(w1, w2, winf)`` of two 1-D weighted sample sets (NaN on traced bad input)."""
    x, wx, okx = prepare_samples("samples_i", samples_i, weights_i, wname="weights_i")
    y, wy, oky = prepare_samples("samples_j", samples_j, weights_j, wname="weights_j")
    ok = okx & oky
    return {
        "w1": nan_where_invalid(wasserstein_1(x, y, wx, wy), ok),
        "w2": nan_where_invalid(wasserstein_2(x, y, wx, wy), ok),
        "winf": nan_where_invalid(wasserstein_inf(x, y, wx, wy), ok),
    }


# ---------------------------------------------------------------------------------------------
# d > 1: entropic OT and an exact-marginal rounding
# ---------------------------------------------------------------------------------------------


def sinkhorn(a, b, cost, *, reg=0.05, num_iters=500):
    r"""Log-domain Sinkhorn: :math:`\pi = \mathrm{diag}(e^{f/\lambda}) e^{-C/\lambda}
    \mathrm{diag}(e^{g/\lambda})` approximately coupling ``a`` and ``b`` (fixed iteration count,
    differentiable by unrolling). Round with :func:`round_to_coupling` before using it in a bound.
    """
    a = jnp.asarray(a, jnp.float64)
    b = jnp.asarray(b, jnp.float64)
    la = jnp.log(a)
    lb = jnp.log(b)
    K = -jnp.asarray(cost, jnp.float64) / reg

    def body(_, fg):
        f, g = fg
        f = la - jax.nn.logsumexp(K + g[None, :], axis=1)
        g = lb - jax.nn.logsumexp(K + f[:, None], axis=0)
        return f, g

    f, g = jax.lax.fori_loop(0, num_iters, body, (jnp.zeros_like(a), jnp.zeros_like(b)))
    return jnp.exp(K + f[:, None] + g[None, :])


def round_to_coupling(P, a, b):
    """Altschuler-Weed-Rigollet rounding: a matrix with row sums ``a`` and column sums ``b`` exactly
    (up to float rounding), entrywise >= 0, close to ``P``."""
    P = jnp.asarray(P, jnp.float64)
    r = P.sum(1)
    x = jnp.minimum(a / jnp.where(r > 0, r, 1.0), 1.0)
    P = P * x[:, None]
    c = P.sum(0)
    y = jnp.minimum(b / jnp.where(c > 0, c, 1.0), 1.0)
    P = P * y[None, :]
    er = a - P.sum(1)
    ec = b - P.sum(0)
    tot = jnp.sum(er)
    P = P + jnp.where(tot > 0, jnp.outer(er, ec) / jnp.where(tot > 0, tot, 1.0), 0.0)
    return jnp.maximum(P, 0.0)


def independent_coupling(a, b):
    return jnp.outer(a, b)


def coupling_objective(P, log_integrand):
    r""":math:`\log \mathbb E_\pi[e^{\ell}] = \mathrm{logsumexp}(\log\pi + \ell)`."""
    return jax.nn.logsumexp(jnp.log(jnp.maximum(P, 0.0)) + log_integrand, b=None)


@functools.partial(jit, static_argnames=("num_steps", "sinkhorn_iters"))
def optimise_coupling(a, b, log_integrand, *, num_steps=400, learning_rate=0.2, sinkhorn_iters=60,
                      init_logits=None):
    r"""Gradient optimisation of a coupling for a condition :math:`\log \mathbb E_\pi[e^{\ell(X, X')}]`.

    The coupling is parametrised as the Sinkhorn projection (unit entropic weight) of
    :math:`e^{\theta}` onto :math:`\Pi(a, b)`; :math:`\theta = 0` is the independent coupling
    :math:`a b^\top`. Adam (optax) minimises the objective; the result is rounded to an exact
    coupling. Returns ``(pi, objective)``.
    """
    a = jnp.asarray(a, jnp.float64)
    b = jnp.asarray(b, jnp.float64)
    ell = jnp.asarray(log_integrand, jnp.float64)
    theta0 = jnp.zeros(ell.shape) if init_logits is None else jnp.asarray(init_logits, jnp.float64)

    def proj(theta):
        return sinkhorn(a, b, -theta, reg=1.0, num_iters=sinkhorn_iters)

    def loss(theta):
        return coupling_objective(proj(theta), ell)

    opt = optax.adam(learning_rate)

    def step(carry, _):
        theta, st = carry
        g = jax.grad(loss)(theta)
        upd, st = opt.update(g, st, theta)
        return (optax.apply_updates(theta, upd), st), None

    (theta, _), _ = jax.lax.scan(step, (theta0, opt.init(theta0)), None, length=num_steps)
    P = round_to_coupling(proj(theta), a, b)
    return P, coupling_objective(P, ell)


__all__ = [
    "Coupling1D", "quantile_coupling", "wasserstein_p", "wasserstein_1", "wasserstein_2",
    "wasserstein_inf", "wasserstein_distances", "sinkhorn", "round_to_coupling",
    "independent_coupling", "coupling_objective", "optimise_coupling",
]
