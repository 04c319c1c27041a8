"""jaxdp as jax_privacy's accountant (needs ``pip install jaxdp[jax_privacy]``, jax_privacy >= 2.0).

:class:`JaxdpAccountantConfig` is a ``jax_privacy.accounting.DpAccountantConfig`` whose
``create_accountant()`` returns a fresh :class:`jaxdp.interop.dp_accounting.JaxdpAccountant`, so
jax_privacy's training accountants and calibration (``DpsgdTrainingAccountant``,
``calibrate_noise_multiplier``, ...) report jaxdp's certified upper bounds::

    >>> from jax_privacy import accounting
    >>> from jaxdp.interop.jax_privacy import JaxdpAccountantConfig
    >>> acc = accounting.DpsgdTrainingAccountant(dp_accountant_config=JaxdpAccountantConfig())
    >>> params = accounting.DpParams(noise_multipliers=3.0, num_samples=10_000, batch_size=1000, delta=1e-6)
    >>> eps = acc.compute_epsilon(512, params)  # doctest: +SKIP

jax_privacy builds the events itself (Poisson-sampled Gaussians, ``ceil(T / cycle_length)`` steps
for cyclic Poisson); events jaxdp has no law for (``TruncatedSubsampledGaussianDpEvent``) make
``compose`` raise dp_accounting's ``UnsupportedEventError``.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import dp_accounting
from jax_privacy import accounting as _jpa

from ..core.pld import Grid
from .dp_accounting import JaxdpAccountant


@dataclasses.dataclass(kw_only=True, slots=True)
class JaxdpAccountantConfig(_jpa.DpAccountantConfig):
    """Configuration for jaxdp's accountant in jax_privacy.

    Attributes:
      neighboring_relation: ``ADD_OR_REMOVE_ONE`` (jax_privacy's accountants' relation) or
        ``REPLACE_ONE``.
      grid: a static :class:`jaxdp.core.pld.Grid`; ``None``: the dp_accounting adapter's
        default (``jaxdp.interop.dp_accounting.DEFAULT_GRID``).
    """

    neighboring_relation: dp_accounting.NeighboringRelation = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    grid: Optional[Grid] = None

    def create_accountant(self) -> JaxdpAccountant:
        return JaxdpAccountant(self.neighboring_relation, grid=self.grid)


__all__ = ["JaxdpAccountantConfig"]
