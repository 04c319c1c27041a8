"""Mechanisms as plain data: each describes a dominating pair through its privacy-loss law."""

from .base import DIRECTIONS, Mechanism, pytree_dataclass
from .gaussian import EpsilonDelta, Gaussian, SubsampledGaussian

__all__ = ["DIRECTIONS", "Mechanism", "pytree_dataclass", "EpsilonDelta", "Gaussian", "SubsampledGaussian"]
