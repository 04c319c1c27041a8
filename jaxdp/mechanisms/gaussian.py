"""Gaussian and Poisson-subsampled Gaussian mechanisms (plain data).

Sensitivity is normalised to 1, so ``noise_multiplier`` sigma is the noise standard deviation in
units of the clipping norm.  Directions follow dp_accounting (add/remove adjacency):

* ``"remove"``: A = (1 - q) N(0, sigma^2) + q N(1, sigma^2),  B = N(0, sigma^2)
* ``"add"``:    A = N(0, sigma^2),  B = (1 - q) N(0, sigma^2) + q N(1, sigma^2)

With q = 1 both are the Gaussian pair, whose privacy loss is N(+-mu^2/2, mu^2), mu = 1/sigma.
The privacy loss ``L(x) = log(1 - q + q exp((2x - 1) / (2 sigma^2)))`` is monotone in the output
x, so its survival functions are mixtures of normal tails in closed form.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax.scipy.special import ndtri

from .._special import ndtr

from .base import pytree_dataclass


def _z_tail(tail: float):
    return -ndtri(jnp.asarray(tail, dtype=jnp.float64))


@pytree_dataclass
class SubsampledGaussian:
    """Poisson-subsampled Gaussian mechanism (one step), add/remove adjacency."""

    noise_multiplier: float
    sampling_probability: float = 1.0

    def prepare(self):
        return self

    def gdp_mu(self):
        # subsampling only helps: q G_mu + (1 - q) Id >= G_mu, and its inverse likewise
        return 1.0 / jnp.asarray(self.noise_multiplier, jnp.float64)

    # x(t): the output at which the remove-direction loss equals t (t > log(1 - q)).
    def _x_of_loss(self, t):
        s, q = self.noise_multiplier, self.sampling_probability
        sub = q < 1.0
        # double-where: keep every branch finite so gradients never see inf * 0
        q_safe = jnp.where(sub, q, 0.5)
        log1mq = jnp.log1p(-q_safe)
        support = jnp.where(sub, t > log1mq, True)
        t_safe = jnp.where(support, t, jnp.where(sub, log1mq + 1.0, 0.0))
        # log(e^t - (1 - q)) = log(1 - q) + log(expm1(u)), u = t - log(1 - q);  = t when q == 1.
        # For u > 30, log(expm1(u)) = u + log1p(-e^{-u}) (expm1 overflowed for u > 709 and put the
        # whole A-law beyond loss ~709 at x = +inf, i.e. nowhere: eps saturated near log(DBL_MAX))
        u = jnp.where(sub, t_safe - log1mq, 1.0)
        big = u > 30.0
        log_em1 = jnp.where(big, u + jnp.log1p(-jnp.exp(-jnp.where(big, u, 30.0))), jnp.log(jnp.expm1(jnp.where(big, 1.0, u))))
        log_diff = jnp.where(sub, log1mq + log_em1, t_safe)
        x = s**2 * (log_diff - jnp.log(q)) + 0.5
        return jnp.where(support, x, -jnp.inf)

    def privacy_loss_sf(self, x, direction: str):
        s, q = self.noise_multiplier, self.sampling_probability
        x = jnp.asarray(x, dtype=jnp.float64)
        if direction not in ("remove", "add"):
            raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
        xo = self._x_of_loss(x if direction == "remove" else -x)
        # outside the support xo = -inf; keep the differentiated branch finite (double-where)
        fin = jnp.isfinite(xo)
        xf = jnp.where(fin, xo, 0.0)
        if direction == "remove":
            # L > x  <=>  output > xo  (xo = -inf: always)
            sf_b = jnp.where(fin, ndtr(-xf / s), 1.0)
            sf_a = jnp.where(fin, (1.0 - q) * ndtr(-xf / s) + q * ndtr(-(xf - 1.0) / s), 1.0)
            sf_b = jnp.where(jnp.isposinf(xo), 0.0, sf_b)
            sf_a = jnp.where(jnp.isposinf(xo), 0.0, sf_a)
            return sf_a, sf_b
        # L_add = -L_remove > x  <=>  L_remove < -x  <=>  output < xo(-x)  (xo = -inf: never)
        sf_a = jnp.where(fin, ndtr(xf / s), 0.0)
        sf_b = jnp.where(fin, (1.0 - q) * ndtr(xf / s) + q * ndtr((xf - 1.0) / s), 0.0)
        sf_a = jnp.where(jnp.isposinf(xo), 1.0, sf_a)
        sf_b = jnp.where(jnp.isposinf(xo), 1.0, sf_b)
        return sf_a, sf_b

    def _loss_remove(self, out):
        s, q = self.noise_multiplier, self.sampling_probability
        z = (2.0 * out - 1.0) / (2.0 * s**2)
        # log(1 - q + q e^z) computed stably; at q = 1 it is z exactly (double-where: log(0) would
        # put 0 * inf = NaN into the q-derivative)
        sub = q < 1.0
        log1mq = jnp.log(jnp.where(sub, 1.0 - q, 1.0))
        return jnp.where(sub, jnp.logaddexp(log1mq, jnp.log(q) + z), jnp.log(q) + z)

    def privacy_loss_range(self, direction: str, tail: float):
        s = self.noise_multiplier
        z = _z_tail(tail)
        lo_out, hi_out = -z * s, 1.0 + z * s
        if direction == "remove":
            return self._loss_remove(lo_out), self._loss_remove(hi_out)
        if direction == "add":
            return -self._loss_remove(hi_out), -self._loss_remove(lo_out)
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")


def Gaussian(noise_multiplier) -> SubsampledGaussian:
    """The Gaussian mechanism with sensitivity 1 and noise std ``noise_multiplier`` (mu = 1/sigma)."""
    return SubsampledGaussian(noise_multiplier=noise_multiplier, sampling_probability=1.0)


@pytree_dataclass
class EpsilonDelta:
    """The canonical (eps, delta)-DP pair whose trade-off curve is f_{eps, delta}.

    Privacy loss under A: +inf w.p. delta, +eps w.p. (1 - delta) e^eps / (1 + e^eps), -eps otherwise.
    Symmetric, so both directions coincide.
    """

    epsilon: float
    delta: float

    def prepare(self):
        return self

    def gdp_mu(self):
        return jnp.asarray(jnp.inf, jnp.float64)  # f_{eps, delta} is below every G_mu near a = 1

    def privacy_loss_sf(self, x, direction: str):
        e, d = self.epsilon, self.delta
        x = jnp.asarray(x, dtype=jnp.float64)
        p_hi = (1.0 - d) * jnp.exp(e) / (1.0 + jnp.exp(e))  # A-mass at +eps
        p_lo = (1.0 - d) / (1.0 + jnp.exp(e))  # A-mass at -eps
        sf_a = d + jnp.where(x < e, p_hi, 0.0) + jnp.where(x < -e, p_lo, 0.0)
        # B-mass: atom at loss l has B = A e^{-l}; no B-mass at +inf
        sf_b = jnp.where(x < e, p_hi * jnp.exp(-e), 0.0) + jnp.where(x < -e, p_lo * jnp.exp(e), 0.0)
        sf_a = jnp.where(jnp.isposinf(x), d, sf_a)
        return sf_a, sf_b

    def privacy_loss_range(self, direction: str, tail: float):
        return -self.epsilon - 1.0, self.epsilon + 1.0
