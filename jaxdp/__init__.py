"""jaxdp: a JAX-based, differentiable privacy accountant.

Importing jaxdp enables float64 in JAX (``jax_enable_x64``): accounting needs it (see
``jaxdp/_config.py``).
"""

from . import _config  # noqa: F401  (float64 before anything is traced)
from . import core, mechanisms, poisson

__version__ = "0.1.0"
__all__ = ["core", "mechanisms", "poisson", "__version__"]
