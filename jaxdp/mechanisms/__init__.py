"""Mechanisms as plain data: each describes a dominating pair through its privacy-loss law."""

from .base import DIRECTIONS, Mechanism, pytree_dataclass
from .gaussian import EpsilonDelta, Gaussian, SubsampledGaussian
from .laplace import Laplace, SubsampledLaplace
from .subsampled import PoissonSubsampled

__all__ = [
    "DIRECTIONS",
    "Mechanism",
    "pytree_dataclass",
    "EpsilonDelta",
    "Gaussian",
    "SubsampledGaussian",
    "Laplace",
    "SubsampledLaplace",
    "PoissonSubsampled",
]
