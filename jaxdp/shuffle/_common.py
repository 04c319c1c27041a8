"""Argument checks and the raw Gaussian curve shared by the closed forms and the asymptotics."""

from __future__ import annotations

from .. import closed_forms as _cf

from .._validate import check, nan_where_invalid


def _sigma(sigma):
    return check("sigma", sigma, lo=0.0, lo_open=True)


def _rounds(M, name="M"):
    return check(name, M, lo=1.0)


def _epochs(E):
    return check("E", E, lo=1.0)


def _alpha(a):
    return check("a", a, lo=0.0, hi=1.0)


def _g(a, mu):
    return _cf.gaussian_curve(a, mu)


def _mu_curve(mu_fn, a, sigma, M, E):
    """G_mu(a) at mu = mu_fn(sigma, M, E), every argument checked (NaN where invalid)."""
    a, ok_a = _alpha(a)
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    E, ok_e = _epochs(E)
    return nan_where_invalid(_g(a, mu_fn(sigma, M, E)), ok_a & ok_s & ok_m & ok_e)
