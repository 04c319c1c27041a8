"""Shared helpers for the property suite (hypothesis draws, numpy checks, mpmath references)."""

from __future__ import annotations

import os

import mpmath as mp
import numpy as np

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE", "ci") == "thorough"


def n_examples(ci: int, thorough: int | None = None) -> int:
    """Per-test example budget: small in CI (compilation dominates), larger on demand."""
    return (thorough or 20 * ci) if THOROUGH else ci


def assert_curve(a, f, *, tol=1e-9, convex=True, name="curve"):
    """A trade-off curve sampled at increasing ``a``: in [0, 1 - a], non-increasing, convex."""
    a = np.asarray(a, np.float64)
    f = np.asarray(f, np.float64)
    assert np.all(np.isfinite(f)), f"{name}: non-finite values {f}"
    assert np.all(f >= -tol), f"{name}: negative values {f.min()}"
    assert np.all(f <= 1.0 - a + tol), f"{name}: above 1 - a by {np.max(f - (1 - a))}"
    d = np.diff(f, axis=-1)
    assert np.all(d <= tol), f"{name}: increasing by {d.max()}"
    if convex:
        # every interior point lies on or below the chord of its neighbours
        a0, a1, a2 = a[..., :-2], a[..., 1:-1], a[..., 2:]
        w = (a1 - a0) / (a2 - a0)
        chord = (1 - w) * f[..., :-2] + w * f[..., 2:]
        gap = f[..., 1:-1] - chord
        assert np.all(gap <= tol), f"{name}: not convex, {gap.max()} above a chord"


mp.mp.dps = 40


def _Phi(x):
    return mp.ncdf(x)


def gauss_curve_ref(a, mu):
    """G_mu(a) = Phi(Phi^{-1}(1 - a) - mu) at 40 digits."""
    a = mp.mpf(a)
    if a <= 0:
        return 1.0
    if a >= 1:
        return 0.0
    z = -mp.sqrt(2) * mp.erfinv(2 * a - 1)  # Phi^{-1}(1 - a)
    return float(_Phi(z - mu))


def gauss_delta_ref(eps, mu):
    eps, mu = mp.mpf(eps), mp.mpf(mu)
    return float(_Phi(-eps / mu + mu / 2) - mp.e**eps * _Phi(-eps / mu - mu / 2))


def gauss_eps_ref(delta, mu, signed=False):
    """Smallest eps >= 0 (any real eps if ``signed``) with delta_{G_mu}(eps) <= delta (mpmath bisection)."""
    delta, mu = mp.mpf(delta), mp.mpf(mu)
    f = lambda e: _Phi(-e / mu + mu / 2) - mp.e**e * _Phi(-e / mu - mu / 2) - delta  # noqa: E731
    if f(0) <= 0 and not signed:
        return 0.0
    lo, hi = (-mu * mu / 2 - 40 * mu - 40 if signed else mp.mpf(0)), mu * mu / 2 + 40 * mu + 1
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return float(hi)
