"""jaxdp: a JAX-based, differentiable privacy accountant.

Importing jaxdp enables float64 in JAX (``jax_enable_x64``): accounting needs it (see
``jaxdp/_config.py``).

Describe what was run with :mod:`jaxdp.events`, then ask :func:`account` what it costs.
"""

from . import _config  # noqa: F401  (float64 before anything is traced)
from . import core, events, mechanisms, poisson
from .accountant import Account, account, supports
from .events import BallsInBins, RandomAllocation

__version__ = "0.1.0"
__all__ = ["core", "events", "mechanisms", "poisson", "account", "supports", "Account", "RandomAllocation", "BallsInBins", "__version__"]
