"""Monte Carlo auditor of trade-off functions, with finite-sample confidence intervals.

A mechanism is audited through samples of its privacy loss Lambda = log dQ/dP under both
hypotheses (a *loss sampler*: ``key -> (loss_under_P, loss_under_Q)``, two independent 1-D
arrays).  Lambda is the optimal (Neyman-Pearson) statistic, so the trade-off function
f = T(P, Q) satisfies, for every threshold t,

.. math::  f\\big(P(\\Lambda > t)\\big) = Q(\\Lambda \\le t),\\qquad
           f\\big(P(\\Lambda \\ge t)\\big) = Q(\\Lambda < t),

and the TV gap sup_a(1 - a - f(a)) = E_P[(1 - e^Lambda)_+] (the densities cross at Lambda = 0).

Estimate at level a: threshold t = empirical (1 - a)-quantile of the P-samples, f_hat = fraction of
Q-samples with Lambda <= t.

Confidence interval for f(a) (coverage >= ``confidence`` for each a), beta = 1 - confidence:

* **Threshold uncertainty (DKW)**.  The thresholds come from the P-samples, so the true level of a
  threshold test is itself random.  The Dvoretzky-Kiefer-Wolfowitz inequality with Massart's
  constant gives, with probability >= 1 - beta/2, sup_t |F_hat_P(t) - F_P(t)| <= eps =
  sqrt(log(4/beta) / (2 n_P)) simultaneously for all t (left limits included).  We pick
  t_hi with F_hat_P(t_hi) >= 1 - a + eps (true level <= a) and t_lo with
  F_hat_P(t_lo-) <= 1 - a - eps (true level >= a); as f is non-increasing,
  Q(Lambda < t_lo) <= f(a) <= Q(Lambda <= t_hi) on that event.
* **Q-probabilities (Clopper-Pearson)**.  The Q-samples are independent of the P-samples, so
  given the thresholds the two counts are binomial; exact one-sided Clopper-Pearson bounds at
  beta/4 each.  Union bound: total miscoverage <= beta/2 + beta/4 + beta/4 = beta.
  Finally lower >= 0 and upper <= 1 - a (always true of a trade-off function).

No sample splitting is needed because thresholds use only P-samples and counts only Q-samples.

TV interval: (1 - e^Lambda)_+ under P lies in [0, 1]; empirical-Bernstein bound (Maurer & Pontil
2009, Thm 4) on each side at beta/2.  Valid only if the sampler returns the exact log-likelihood
ratio (check ``mean_likelihood_ratio`` ~ 1).

References:
    P. Massart, "The tight constant in the DKW inequality", Ann. Probab. 18 (1990).
    C. J. Clopper, E. S. Pearson, Biometrika 26 (1934).
    A. Maurer, M. Pontil, "Empirical Bernstein bounds and sample variance penalization", COLT 2009.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import betainc

from jaxdp._config import jit
from jaxdp import _config  # noqa: F401  (float64)
from jaxdp._validate import check, check_static_int, nan_where_invalid

__all__ = [
    "TradeoffAudit",
    "audit_shuffled_gaussian",
    "audit_tradeoff",
    "clopper_pearson",
    "gaussian_loss_sampler",
    "shuffled_gaussian_loss_sampler",
]


class TradeoffAudit(NamedTuple):
    """Result of :func:`audit_tradeoff` (a pytree; arrays broadcast like ``alpha``).

    Fields:
        alpha: the type I errors a audited.
        estimate, lower, upper: point estimate of f(a) and its confidence interval.
        tv_estimate, tv_lower, tv_upper: TV gap sup_a(1 - a - f(a)) and its interval.
        dkw_epsilon: half-width of the DKW band on the P-quantile levels.
        mean_likelihood_ratio: mean of e^Lambda over P-samples (should be ~1; a diagnostic that
            the sampler returns the true log-likelihood ratio).
        confidence: the nominal coverage of each interval.
    """

    alpha: jax.Array
    estimate: jax.Array
    lower: jax.Array
    upper: jax.Array
    tv_estimate: jax.Array
    tv_lower: jax.Array
    tv_upper: jax.Array
    dkw_epsilon: jax.Array
    mean_likelihood_ratio: jax.Array
    confidence: jax.Array


def _beta_ppf(q, a, b, iters=80):
    # Bisection on the regularised incomplete beta (monotone in x); 80 halvings reach 1e-24.
    def body(_, lohi):
        lo, hi = lohi
        mid = 0.5 * (lo + hi)
        below = betainc(a, b, mid) < q
        return jnp.where(below, mid, lo), jnp.where(below, hi, mid)

    lo, hi = jax.lax.fori_loop(0, iters, body, (jnp.zeros_like(q), jnp.ones_like(q)))
    return 0.5 * (lo + hi)


def clopper_pearson(k, n, beta):
    """One-sided exact Clopper-Pearson bounds (lower, upper), each with miscoverage ``beta``.

    lower = Beta^{-1}(beta; k, n - k + 1) (0 if k = 0), upper = Beta^{-1}(1 - beta; k + 1, n - k)
    (1 if k = n).
    """
    k = jnp.asarray(k, jnp.float64)
    n = jnp.asarray(n, jnp.float64)
    beta = jnp.asarray(beta, jnp.float64)
    k, n, beta = jnp.broadcast_arrays(k, n, beta)
    lo = _beta_ppf(beta, jnp.maximum(k, 1.0), n - k + 1.0)
    hi = _beta_ppf(1.0 - beta, k + 1.0, jnp.maximum(n - k, 1.0))
    return jnp.where(k <= 0, 0.0, lo), jnp.where(k >= n, 1.0, hi)


def _empirical_bernstein(x, beta):
    # Maurer-Pontil Thm 4, X in [0, 1]: |mean - E X| <= sqrt(2 V log(2/beta)/n) + 7 log(2/beta)/(3(n-1))
    # with probability >= 1 - beta on each side separately.
    n = x.shape[0]
    mean = jnp.mean(x)
    var = jnp.var(x, ddof=1)
    lg = jnp.log(2.0 / beta)
    w = jnp.sqrt(2.0 * var * lg / n) + 7.0 * lg / (3.0 * (n - 1))
    return mean, jnp.clip(mean - w, 0.0, 1.0), jnp.clip(mean + w, 0.0, 1.0)


@jit
def _audit_core(loss_p, loss_q, alpha, confidence):
    n, m = loss_p.shape[0], loss_q.shape[0]
    beta = 1.0 - confidence
    sp = jnp.sort(loss_p)
    sq = jnp.sort(loss_q)
    eps = jnp.sqrt(jnp.log(4.0 / beta) / (2.0 * n))

    def q_count_le(t):
        return jnp.searchsorted(sq, t, side="right").astype(jnp.float64)

    # point estimate: t = s_(k), k = ceil(n (1 - a)); a = 1 -> f = 0
    k = jnp.ceil(n * (1.0 - alpha) - 1e-9).astype(jnp.int32)
    t_hat = sp[jnp.clip(k, 1, n) - 1]
    est = jnp.where(k <= 0, 0.0, q_count_le(t_hat) / m)

    # upper: F_hat(t_hi) >= 1 - a + eps  =>  true level <= a
    k_hi = jnp.ceil(n * (1.0 - alpha + eps) - 1e-9).astype(jnp.int32)
    c_hi = jnp.where(k_hi > n, float(m), q_count_le(sp[jnp.clip(k_hi, 1, n) - 1]))
    c_hi = jnp.where(k_hi <= 0, 0.0, c_hi)
    # lower: #{P-samples < s_(k_lo + 1)} <= k_lo <= n (1 - a - eps)  =>  true level >= a
    k_lo = jnp.floor(n * (1.0 - alpha - eps) + 1e-9).astype(jnp.int32)
    c_lo = jnp.searchsorted(sq, sp[jnp.clip(k_lo, 0, n - 1)], side="left").astype(jnp.float64)
    c_lo = jnp.where(k_lo < 0, 0.0, c_lo)
    lo_cp, _ = clopper_pearson(c_lo, m, beta / 4.0)
    _, hi_cp = clopper_pearson(c_hi, m, beta / 4.0)
    lower = jnp.where(k_lo < 0, 0.0, lo_cp)
    upper = jnp.minimum(hi_cp, 1.0 - alpha)
    lower = jnp.minimum(lower, upper)

    tv_terms = jnp.clip(-jnp.expm1(loss_p), 0.0, 1.0)  # (1 - e^Lambda)_+
    tv, tv_lo, tv_hi = _empirical_bernstein(tv_terms, beta / 2.0)
    mean_lr = jnp.mean(jnp.exp(loss_p))

    return est, lower, upper, tv, tv_lo, tv_hi, eps, mean_lr


def audit_tradeoff(key, loss_sampler: Callable, alpha, *, confidence=0.99) -> TradeoffAudit:
    """Monte Carlo estimate of f(alpha) = T(P, Q)(alpha) and of the TV gap, with intervals.

    Args:
        key: a ``jax.random`` key.
        loss_sampler: ``key -> (loss_p, loss_q)``: independent samples (1-D, static lengths
            n_P >= 2, n_Q >= 1) of the privacy loss log dQ/dP under P and under Q.  Any mechanism
            can be audited this way (see :func:`gaussian_loss_sampler`,
            :func:`shuffled_gaussian_loss_sampler`).
        alpha: type I error(s) in [0, 1]; any shape (one simulation serves all).
        confidence: nominal coverage of each interval (default 0.99); method in the module
            docstring (DKW band for the estimated threshold + Clopper-Pearson for the Q-count).

    jit: ``jax.jit(lambda k, a: audit_tradeoff(k, sampler, a))``; vmap over keys or alpha.
    """
    alpha, ok_a = check("alpha", alpha, lo=0.0, hi=1.0)
    confidence, ok_c = check("confidence", confidence, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    loss_p, loss_q = loss_sampler(key)
    loss_p = jnp.asarray(loss_p, jnp.float64).ravel()
    loss_q = jnp.asarray(loss_q, jnp.float64).ravel()
    n, m = loss_p.shape[0], loss_q.shape[0]
    if n < 2 or m < 1:
        raise ValueError(f"loss_sampler must return >= 2 P-samples and >= 1 Q-samples, got {n}, {m}")
    est, lower, upper, tv, tv_lo, tv_hi, eps, mean_lr = _audit_core(loss_p, loss_q, alpha, confidence)

    ok = ok_a & ok_c
    okc = jnp.broadcast_to(ok_c, ())
    return TradeoffAudit(
        alpha=alpha,
        estimate=nan_where_invalid(est, ok),
        lower=nan_where_invalid(lower, ok),
        upper=nan_where_invalid(upper, ok),
        tv_estimate=nan_where_invalid(tv, okc),
        tv_lower=nan_where_invalid(tv_lo, okc),
        tv_upper=nan_where_invalid(tv_hi, okc),
        dkw_epsilon=nan_where_invalid(eps, okc),
        mean_likelihood_ratio=mean_lr,
        confidence=confidence,
    )


# --------------------------------------------------------------------------------------------
# Samplers
# --------------------------------------------------------------------------------------------


def gaussian_loss_sampler(mu, *, num_samples=100_000):
    """Loss sampler of the Gaussian pair P = N(0, 1), Q = N(mu, 1) (exact curve G_mu).

    Lambda = mu x - mu^2/2.  ``mu`` may be traced; ``num_samples`` is static.
    """
    num_samples = check_static_int("num_samples", num_samples, 2)
    mu, ok = check("mu", mu, lo=0.0)

    def sampler(key):
        kp, kq = jax.random.split(key)
        xp = jax.random.normal(kp, (num_samples,))
        xq = jax.random.normal(kq, (num_samples,)) + mu
        lp = nan_where_invalid(mu * xp - 0.5 * mu * mu, ok)
        lq = nan_where_invalid(mu * xq - 0.5 * mu * mu, ok)
        return lp, lq

    return sampler


def _epoch_losses(key, sigma, num_rounds, shifted, batch, block):
    """log L for ``batch`` independent epochs: logsumexp_j(x_j/sigma) - 1/(2 sigma^2) - log M.

    Under Q the differing example sits in a uniform round; log L is symmetric in the rounds, so
    shifting round 0 by 1/sigma has exactly the same law.  Memory O(batch * block): the M rounds
    are streamed in blocks with a running (max, sum-exp) pair.
    """
    nblocks = -(-num_rounds // block)
    width = min(block, num_rounds)
    inv_s = 1.0 / sigma

    def step(carry, j):
        mx, se = carry
        x = jax.random.normal(jax.random.fold_in(key, j), (batch, width))
        z = x * inv_s
        col = j * width + jnp.arange(width)
        if shifted:
            z = z + jnp.where(col == 0, inv_s * inv_s, 0.0)
        z = jnp.where(col < num_rounds, z, -jnp.inf)
        bm = jnp.max(z, axis=1)
        new = jnp.maximum(mx, bm)
        se = se * jnp.exp(mx - new) + jnp.sum(jnp.exp(z - new[:, None]), axis=1)
        return (new, se), None

    init = (jnp.full((batch,), -jnp.inf), jnp.zeros((batch,)))
    (mx, se), _ = jax.lax.scan(step, init, jnp.arange(nblocks))
    return mx + jnp.log(se) - 0.5 * inv_s * inv_s - jnp.log(float(num_rounds))


@functools.partial(jit, static_argnums=(2, 3, 4, 5, 6, 7))
def _draw_losses(key, sigma, M, E, n, B, K, shifted):
    total = n * E
    nbatch = -(-total // B)

    def one(i):
        return _epoch_losses(jax.random.fold_in(key, i), sigma, M, shifted, B, K)

    per_epoch = jax.lax.map(one, jnp.arange(nbatch)).reshape(-1)[:total]
    return per_epoch.reshape(n, E).sum(axis=1)


def shuffled_gaussian_loss_sampler(
    sigma, num_rounds, *, num_epochs=1, num_samples=100_000, chunk_size=2**22, block_size=8192
):
    """Loss sampler of E shuffled epochs of M rounds (spec section 1).

    One epoch: x ~ N(0, I_M) under P; under Q one uniformly chosen coordinate is shifted by
    1/sigma.  Loss: Lambda = sum over epochs of log((1/M) sum_j exp(x_j/sigma - 1/(2 sigma^2)))
    (log-sum-exp).  Exact in distribution (no approximation).

    ``sigma`` may be traced; ``num_rounds`` (M), ``num_epochs`` (E), ``num_samples``,
    ``chunk_size``, ``block_size`` are static.  Rounds are streamed in blocks of ``block_size``
    and epochs in batches of ``chunk_size // min(M, block_size)``, so memory is
    O(chunk_size + block_size) floats (default 2^22 ~ 32 MiB); time
    O(num_samples * E * M) Gaussian draws, so M up to ~1e5 is practical (n E M <~ 1e9 on CPU,
    ~1e11 on an accelerator).  Returns ``key -> (loss_p, loss_q)`` with num_samples each.
    """
    M = check_static_int("num_rounds", num_rounds, 1)
    E = check_static_int("num_epochs", num_epochs, 1)
    n = check_static_int("num_samples", num_samples, 2)
    C = check_static_int("chunk_size", chunk_size, 1)
    K = check_static_int("block_size", block_size, 1)
    sigma, ok = check("sigma", sigma, lo=0.0, lo_open=True)
    total = n * E
    B = max(1, min(total, C // min(M, K)))

    def sampler(key):
        kp, kq = jax.random.split(key)
        lp = _draw_losses(kp, sigma, M, E, n, B, K, False)
        lq = _draw_losses(kq, sigma, M, E, n, B, K, True)
        return nan_where_invalid(lp, ok), nan_where_invalid(lq, ok)

    return sampler


def audit_shuffled_gaussian(
    key,
    alpha,
    sigma,
    num_rounds,
    *,
    num_epochs=1,
    num_samples=100_000,
    confidence=0.99,
    chunk_size=2**22,
    block_size=8192,
) -> TradeoffAudit:
    """:func:`audit_tradeoff` with :func:`shuffled_gaussian_loss_sampler` (see both)."""
    sampler = shuffled_gaussian_loss_sampler(
        sigma,
        num_rounds,
        num_epochs=num_epochs,
        num_samples=num_samples,
        chunk_size=chunk_size,
        block_size=block_size,
    )
    return audit_tradeoff(key, sampler, alpha, confidence=confidence)
