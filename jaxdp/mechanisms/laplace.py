r"""The Laplace mechanism and its Poisson-subsampled version (plain data).

Sensitivity is normalised to 1, so ``noise_multiplier`` b is the Laplace scale in units of the
sensitivity (dp_accounting's ``LaplaceDpEvent(noise_multiplier)`` with
``PLD.from_laplace_mechanism(parameter=b, sensitivity=1)``).  Directions as in
:mod:`jaxdp.mechanisms.base`: "remove" is A = Lap(1, b) (with the example), B = Lap(0, b); "add"
is the reverse pair, which has the same privacy-loss law (reflect the output about 1/2).

The privacy loss at output y is :math:`L(y) = (|y| - |y - 1|)/b`: the constant :math:`-\varepsilon`
for :math:`y \le 0`, :math:`(2y - 1)/b` on (0, 1) and :math:`+\varepsilon` for :math:`y \ge 1`, with
:math:`\varepsilon = 1/b`.  With :math:`L > x \iff y > (bx + 1)/2` for
:math:`-\varepsilon \le x < \varepsilon` the survival functions are, in closed form,

.. math::

    A(L > x) = 1 - \tfrac12 e^{-(\varepsilon - x)/2}, \qquad
    B(L > x) = \tfrac12 e^{-(\varepsilon + x)/2} \qquad (-\varepsilon \le x < \varepsilon),

1 below :math:`-\varepsilon` and 0 from :math:`\varepsilon` on: atoms of A-mass 1/2 at
:math:`+\varepsilon` and :math:`\tfrac12 e^{-\varepsilon}` at :math:`-\varepsilon` (the same law as
dp_accounting's ``LaplacePrivacyLoss``, whose privacy loss is written
:math:`(|x - \Delta| - |x|)/b` on the mirrored pair).

Subsampled: the pairs of :mod:`jaxdp.mechanisms.subsampled` (dp_accounting's
``LaplacePrivacyLoss(sampling_prob=q)``: for ADD, :math:`\mu_{lower} = q\mu(x - \Delta) + (1-q)\mu(x)`;
for REMOVE, :math:`\mu_{upper} = q\mu(x + \Delta) + (1-q)\mu(x)`), exact from the closed form above.

References:
  Doroshenko, Ghazi, Kamath, Kumar, Manurangsi, "Connect the dots: tighter discrete approximations
  of privacy loss distributions", PETS 2022 (arXiv:2207.04380); dp_accounting
  ``pld/privacy_loss_mechanism.py`` (``LaplacePrivacyLoss``).
"""

from __future__ import annotations

import jax.numpy as jnp

from .base import DIRECTIONS, pytree_dataclass
from .subsampled import PoissonSubsampled


@pytree_dataclass
class Laplace:
    """The Laplace mechanism with sensitivity 1 and scale ``noise_multiplier`` b (pure 1/b-DP)."""

    noise_multiplier: float

    def prepare(self):
        return self

    def gdp_mu(self):
        return jnp.asarray(jnp.inf, jnp.float64)  # pure DP: f = e^{-eps}(1 - a) near a = 1 is below every G_mu

    def privacy_loss_sf(self, x, direction: str):
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
        eps = 1.0 / self.noise_multiplier
        x = jnp.asarray(x, dtype=jnp.float64)
        inside = (x >= -eps) & (x < eps)
        # finite stand-in outside [-eps, eps) (incl. +-inf): no inf * 0 in reverse mode
        xs = jnp.where(inside, x, 0.0)
        sf_a = 1.0 - 0.5 * jnp.exp(-(eps - xs) / 2.0)
        sf_b = 0.5 * jnp.exp(-(eps + xs) / 2.0)
        low = x < -eps
        return jnp.where(inside, sf_a, jnp.where(low, 1.0, 0.0)), jnp.where(inside, sf_b, jnp.where(low, 1.0, 0.0))

    def privacy_loss_range(self, direction: str, tail: float):
        eps = 1.0 / self.noise_multiplier
        return -eps, eps


def SubsampledLaplace(noise_multiplier, sampling_probability) -> PoissonSubsampled:
    """The Laplace mechanism on a Poisson sample of rate ``sampling_probability`` (add/remove)."""
    return PoissonSubsampled(Laplace(noise_multiplier), sampling_probability)


__all__ = ["Laplace", "SubsampledLaplace"]
