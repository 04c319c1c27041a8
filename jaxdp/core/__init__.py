"""The core representation: privacy-loss distributions and trade-off curves."""

from . import pld, tradeoff
from .pld import DEFAULT_GRID, PLD, Grid, compose, self_compose
from .tradeoff import PiecewiseLinear

__all__ = ["pld", "tradeoff", "Grid", "DEFAULT_GRID", "PLD", "compose", "self_compose", "PiecewiseLinear"]
