"""Independent high-precision reference for the single-epoch shuffled-Gaussian law (test-only).

Different method from jaxdp's (FFT of damped characteristic functions on an adapted grid, with
phi_Y from a trapezoid rule on a shifted Gaussian contour):

* phi_Y(u) and phi_{Y'}(u) = E[Y e^{iuY}] by adaptive Gauss-Kronrod quadrature
  (``scipy.integrate.quad``, epsrel 2e-14) on the *fully rotated* Laplace contour y = i e^rho
  (u > 0), where the integrand is non-oscillatory:
      E e^{iuY} = int exp(-u e^rho) N(rho + i pi/2; mu, s^2) d rho,  mu = -s^2/2 (P) or +s^2/2 (Y'),
  with the remainder r(u) = phi_Y(u) - 1 - iu integrated directly from the positive kernel
  e^{-x} - 1 + x (no cancellation), so M log phi_Y(u) keeps ~1e-13 absolute accuracy for M = 1e9.
* The laws of U = sqrt(M)(L - 1) under P and Q pointwise by the Gil-Pelaez inversion formula
      P(U <= x) = 1/2 - (1/pi) int_0^inf Im(e^{-iwx} phi_U(w)) / w dw,
  integrated by Gauss-Legendre panels (geometric near w = 0, where heavy tails put structure,
  then uniform), with phi_U(w) = exp(M (log phi_Y(u) - iu)) (P) and
  exp((M - 1)(log phi_Y(u) - iu) + log phi_Y'(u) - iu) (Q), u = w / sqrt(M); the logarithm is
  continued along increasing w (valid for real, non-integer M).

No FFT, no grid in x, no aliasing, no interpolation.  Used to produce the hard-coded expected values
in ``test_exact_law.py`` (``python tests/shuffle/reference_law.py`` reprints them).

For small M and small sigma (heavy, multi-scale laws: the characteristic function decays too slowly
for the Gil-Pelaez panels above; at sigma = 1, M = 2 they are off by 6e-5) a second reference,
:class:`LaplaceReference`, inverts the Laplace transform of S = M L instead:

* E e^{-pY} and E[Y e^{-pY}] by mpmath adaptive quadrature (``mp.quad``, 20 digits) in log y on the
  contour rotated by -arg p (p e^{rho + i beta} real positive: no oscillation);
* P(S <= t) = L^{-1}[E[e^{-pY}]^M / p](t), Q(S <= t) = L^{-1}[E[Y e^{-pY}] E[e^{-pY}]^{M-1} / p](t)
  by the de Hoog-Knight-Stokes algorithm (``mp.invertlaplace(..., method="dehoog")``: accelerated
  Fourier series on the Bromwich line Re p = gamma > 0), the logarithm continued along the line
  for non-integer M.

This is a different inversion (Bromwich line, Pade acceleration), quadrature (adaptive, 20 digits)
and parametrisation from jaxdp's Laplace method (fixed Talbot contour, trapezoid rule, Chebyshev
table); at M = 2 it matches a direct scipy convolution of two lognormals to 1e-16
(``python tests/shuffle/reference_law.py small`` reprints the values; ~15 s per threshold).
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np
from scipy import integrate


def _phi1(x):
    """e^{-x} - 1 + x for real x >= 0 without cancellation."""
    x = np.asarray(x, dtype=float)
    small = x < 1e-2
    xs = np.where(small, x, 0.0)
    ser = xs * xs * (0.5 - xs * (1 / 6 - xs * (1 / 24 - xs * (1 / 120 - xs * (1 / 720 - xs / 5040)))))
    return np.where(small, ser, np.expm1(-np.where(small, 1.0, x)) + x)


def _cquad(f, lo, hi, pts):
    kw = dict(points=pts, limit=400, epsabs=0.0, epsrel=2e-14)
    re = integrate.quad(lambda r: f(r).real, lo, hi, **kw)[0]
    im = integrate.quad(lambda r: f(r).imag, lo, hi, **kw)[0]
    return re + 1j * im


def log_cf_pieces(w, s, m):
    """(K, K_Q) = (log phi_Y(u) - iu, log phi_Y'(u) - iu), u = w/sqrt(m) > 0.

    On the rotated contour y = i e^rho the three parts of r(u) = E[e^{iuY} - 1 - iuY] combine
    into the positive, cancellation-free kernel e^{-x} - 1 + x, x = u e^rho, so r(u) -- hence
    M K(u) for M up to 1e10 -- has full relative accuracy in double precision.
    """
    u = w / math.sqrt(m)
    norm = 1.0 / (s * math.sqrt(2 * math.pi))

    def gauss(rho, mu):
        return np.exp(-((rho + 0.5j * math.pi - mu) ** 2) / (2 * s * s)) * norm

    out = []
    for mu, kind in ((-0.5 * s * s, "p"), (0.5 * s * s, "q")):
        lo, hi = mu - 14 * s, mu + 14 * s
        pts = [p for p in (mu - 4 * s, mu, mu + 4 * s, -math.log(u)) if lo < p < hi]
        if kind == "p":
            r = _cquad(lambda rho: _phi1(u * math.exp(rho)) * gauss(rho, mu), lo, hi, pts)
            z = 1j * u + r
            if abs(z) < 0.1:
                g = sum(((-1) ** (k + 1)) * z**k / k for k in range(2, 20))
                out.append(r + g)
            else:
                out.append(np.log(1 + z) - 1j * u)
        else:
            ph = _cquad(lambda rho: math.exp(-u * math.exp(rho)) * gauss(rho, mu), lo, hi, pts)
            out.append(np.log(ph) - 1j * u)
    return out[0], out[1]


def _nodes(w_max, n_gl=20, n_geo=30, n_uni=40):
    """Gauss-Legendre nodes/weights on [0, w_max]: geometric panels near 0, uniform above."""
    x, wt = np.polynomial.legendre.leggauss(n_gl)
    w1 = w_max / 8.0
    edges = [0.0] + list(np.geomspace(w1 * 1e-9, w1, n_geo)) + list(np.linspace(w1, w_max, n_uni + 1)[1:])
    nodes, weights = [], []
    for a, b in zip(edges[:-1], edges[1:]):
        nodes += list(0.5 * (b - a) * x + 0.5 * (b + a))
        weights += list(0.5 * (b - a) * wt)
    return np.array(nodes), np.array(weights)


class ReferenceLaw:
    """Pointwise P(U <= x), Q(U <= x) for one (sigma, M) by Gil-Pelaez inversion."""

    def __init__(self, sigma, m, w_max=None):
        self.s = s = 1.0 / sigma
        self.m = m
        v = math.expm1(s * s)
        if w_max is None:
            # |phi_U(w)| < e^-45 beyond w_max: doubling search from the Gaussian guess.
            w_max = 9.0 / math.sqrt(v)
            while m * log_cf_pieces(w_max, s, m)[0].real > -45:
                w_max *= 1.3
        self.w_max = w_max
        self.nodes, self.weights = _nodes(w_max)
        ks = [log_cf_pieces(w, s, m) for w in self.nodes]
        k = np.array([a for a, _ in ks])
        kq = np.array([b for _, b in ks])
        # continue the logarithm along increasing w (needed for non-integer M)
        k = k.real + 1j * np.unwrap(k.imag)
        kq = kq.real + 1j * np.unwrap(kq.imag)
        self.phi_p = np.exp(m * k)
        self.phi_q = np.exp((m - 1) * k + kq)

    def cdf(self, x):
        """(P(U <= x), Q(U <= x))."""
        w = self.nodes
        e = np.exp(-1j * w * x)
        out = []
        for phi in (self.phi_p, self.phi_q):
            acc = math.fsum(self.weights * (e * phi).imag / w)
            out.append(0.5 - acc / math.pi)
        return out

    def tv(self):
        """TV(P, Q) = Q(U > 0) - P(U > 0)."""
        cp, cq = self.cdf(0.0)
        return cp - cq


# Points checked by the tests: (sigma, M, thresholds x in U units).
POINTS = [
    (0.5, 1e3, [-3.0, -1.0, 0.0, 1.0, 3.0, 10.0]),
    (1.0, 1e9, [-2.0, -1.0, 0.0, 1.0, 2.0, 5.0]),
    (2.0, 5.0, [-0.6, -0.2, 0.0, 0.2, 0.6, 1.5]),
    (1.0, 2.5, [-1.2, -0.5, 0.0, 0.5, 1.5, 4.0]),
    (1.0, 100.0, [-2.0, -1.0, 0.0, 1.0, 2.0, 5.0]),
    (0.8, 1e3, [-3.0, -1.0, 0.0, 1.0, 3.0, 8.0]),
    (3.0, 1e6, [-0.6, -0.2, 0.0, 0.2, 0.6, 1.5]),
]


class LaplaceReference:
    """Pointwise P(S <= t), Q(S <= t), S = M L, by de Hoog inversion of the Laplace transform."""

    def __init__(self, sigma, m, dps=20):
        import mpmath as mp

        self.mp = mp
        self.s = mp.mpf(1) / sigma
        self.m = mp.mpf(m)
        self.dps = dps

    def _lt(self, p, mu):
        """E[exp(-p e^R)], R ~ N(mu, s^2), on the contour R = rho + i beta, beta = -arg p."""
        mp, s = self.mp, self.s
        beta = -mp.arg(p)
        norm = 1 / (s * mp.sqrt(2 * mp.pi))

        def f(r):
            z = r + 1j * beta
            return mp.exp(-p * mp.exp(z) - (z - mu) ** 2 / (2 * s * s)) * norm

        lo, hi = mu - 14 * s, mu + 14 * s
        knots = [lo, mu - 4 * s, mu, mu + 4 * s, hi]
        c = -mp.log(abs(p))
        if lo < c < hi:
            knots.append(c)
        return mp.quad(f, sorted(knots))

    def cdf(self, t):
        """(P(S <= t), Q(S <= t))."""
        mp, s = self.mp, self.s
        out = []
        for kind in ("p", "q"):
            state = {}

            def F(p, kind=kind, state=state):
                lp = mp.log(self._lt(p, -s * s / 2))
                if "prev" in state:  # continue log E e^{-pY} along the Bromwich line
                    lp += 2j * mp.pi * mp.nint((state["prev"].imag - lp.imag) / (2 * mp.pi))
                state["prev"] = lp
                val = self.m * lp if kind == "p" else (self.m - 1) * lp + mp.log(self._lt(p, s * s / 2))
                return mp.exp(val) / p

            with mp.workdps(self.dps):
                out.append(float(mp.invertlaplace(F, t, method="dehoog")))
        return out


# Small-M / small-sigma points (issue 3): thresholds t = factor x M in S units.
POINTS_SMALL = [
    (0.3, 1.5), (0.3, 10.0), (0.5, 2.0), (0.5, 50.0), (1.0, 1.5), (1.0, 2.0), (1.0, 5.0), (1.0, 2.5),
]
FACTORS_SMALL = [0.1, 0.5, 1.0, 2.0, 10.0, 100.0]


def compute_small(points=POINTS_SMALL):
    res = []
    for sigma, m in points:
        ref = LaplaceReference(sigma, m)
        rows = []
        for fct in FACTORS_SMALL:
            t = fct * m
            cp, cq = ref.cdf(t)
            x = (t - m) / math.sqrt(m)
            rows.append([x, float(1 - cp), float(cq), float(1 - cq)])  # x, P-sf, Q-cdf, Q-sf
        res.append(dict(sigma=sigma, M=m, rows=rows))
        print(json.dumps(res[-1]), flush=True)
    return res


def compute(points=POINTS):
    res = []
    for sigma, m, xs in points:
        ref = ReferenceLaw(sigma, m)
        rows = []
        for x in xs:
            cp, cq = ref.cdf(x)
            rows.append([x, float(1 - cp), float(cq), float(1 - cq)])  # x, P-sf, Q-cdf, Q-sf
        res.append(dict(sigma=sigma, M=m, rows=rows))
        print(json.dumps(res[-1]), flush=True)
    return res


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "small":
        sel = POINTS_SMALL if len(sys.argv) < 3 else [POINTS_SMALL[int(i)] for i in sys.argv[2:]]
        compute_small(sel)
    else:
        sel = POINTS if len(sys.argv) < 2 else [POINTS[int(i)] for i in sys.argv[1:]]
        compute(sel)
