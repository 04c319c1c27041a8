r"""Poisson subsampling of any mechanism with a privacy-loss law (a mechanism combinator).

Each example enters the batch independently with probability q; the inner mechanism runs on the
batch.  For add/remove adjacency (Zhu, Dong & Wang, "Optimal accounting of differential privacy
via characteristic function", AISTATS 2022, Theorem 11; dp_accounting's
``AdditiveNoisePrivacyLoss`` uses the same pairs), if the inner mechanism has the dominating pairs
:math:`(A_r, B_r)` ("remove") and :math:`(A_a, B_a)` ("add") of :mod:`jaxdp.mechanisms.base`, the
subsampled mechanism is dominated by

.. math::

    \text{remove: } (q A_r + (1-q) B_r,\; B_r), \qquad
    \text{add: } (A_a,\; (1-q) A_a + q B_a).

Their privacy losses are increasing functions of the inner loss L,

.. math::

    L_r' = \log(1 - q + q e^{L}), \qquad L_a' = -\log(1 - q + q e^{-L}),

so their survival functions follow exactly from the inner ones at the preimage thresholds
:math:`g(x) = \log((e^x - (1-q))/q)` (remove) and :math:`-g(-x)` (add).  The ranges are bounded:
:math:`L_r' \ge \log(1-q)` (the value at L = -inf) and :math:`L_a' \le -\log(1-q)` (at L = +inf).
"""

from __future__ import annotations

import jax.numpy as jnp

from .base import DIRECTIONS, pytree_dataclass


def _check_direction(direction):
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")


def loss_preimage(x, q):
    """y with log(1 - q + q e^y) = x, i.e. log((e^x - (1 - q)) / q); -inf where x <= log(1 - q).

    Stable for small q (log1p / expm1) and with finite stand-ins on the untaken branches so that
    reverse mode never multiplies a zero cotangent by an infinite derivative (double-where).
    """
    x = jnp.asarray(x, dtype=jnp.float64)
    sub = q < 1.0
    q_safe = jnp.where(sub, q, 0.5)
    log1mq = jnp.log1p(-q_safe)
    support = jnp.where(sub, x > log1mq, True) & jnp.isfinite(x)
    x_safe = jnp.where(support, x, jnp.where(sub, log1mq + 1.0, 0.0))
    d = jnp.where(sub, x_safe - log1mq, 1.0)
    log_diff = jnp.where(sub, log1mq + jnp.log(jnp.expm1(d)), x_safe)
    y = log_diff - jnp.log(q)
    return jnp.where(support, y, jnp.where(jnp.isposinf(x), jnp.inf, -jnp.inf))


def subsampled_loss(loss, q, direction):
    """The subsampled loss as a function of the inner loss (remove: log(1-q+q e^L); add: the mirror)."""
    l = jnp.asarray(loss, dtype=jnp.float64)
    sub = q < 1.0
    log1mq = jnp.log(jnp.where(sub, 1.0 - q, 1.0))
    sign = 1.0 if direction == "remove" else -1.0
    # (at q = 1 the map is the identity; the where keeps log(0) out of the q-derivative)
    out = jnp.where(sub, jnp.logaddexp(log1mq, jnp.log(q) + sign * l), jnp.log(q) + sign * l)
    return sign * out


@pytree_dataclass
class PoissonSubsampled:
    """``mechanism`` run on a Poisson sample (rate ``sampling_probability`` in (0, 1]), add/remove adjacency."""

    mechanism: object
    sampling_probability: float

    def prepare(self):
        """Tabulate the inner law once, if it has a tabulation step (see :meth:`ShuffledGaussian.prepare`)."""
        return PoissonSubsampled(self.mechanism.prepare(), self.sampling_probability)

    def gdp_mu(self):
        # subsampling only helps (the subsampled curve lies above the inner one, both directions)
        return self.mechanism.gdp_mu()

    def privacy_loss_sf(self, x, direction: str):
        _check_direction(direction)
        q = self.sampling_probability
        x = jnp.asarray(x, dtype=jnp.float64)
        sub = q < 1.0
        log1mq = jnp.log(jnp.where(sub, 1.0 - q, 0.5))
        if direction == "remove":
            # L' > x  <=>  L > g(x); below log(1 - q) every outcome counts (incl. the B-mass at
            # L = -inf, where L' = log(1 - q) exactly)
            sa, sb = self.mechanism.privacy_loss_sf(loss_preimage(x, q), "remove")
            below = sub & (x < log1mq)
            return jnp.where(below, 1.0, q * sa + (1.0 - q) * sb), jnp.where(below, 1.0, sb)
        # L'_a > x  <=>  L_a > -g(-x); at and above -log(1 - q) nothing (L = +inf maps to it)
        sa, sb = self.mechanism.privacy_loss_sf(-loss_preimage(-x, q), "add")
        above = sub & (x >= -log1mq)
        sa_q = jnp.where(above, 0.0, sa)
        sb_q = jnp.where(above, 0.0, (1.0 - q) * sa + q * sb)
        return sa_q, sb_q

    def privacy_loss_range(self, direction: str, tail: float):
        _check_direction(direction)
        lo, hi = self.mechanism.privacy_loss_range(direction, tail)
        q = self.sampling_probability
        return subsampled_loss(lo, q, direction), subsampled_loss(hi, q, direction)


__all__ = ["PoissonSubsampled", "loss_preimage", "subsampled_loss"]
