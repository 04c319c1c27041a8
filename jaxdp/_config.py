"""Float64 for the accountant.

Privacy accounting needs float64: deltas of 1e-8 are differences of probabilities close to one,
PLD grids hold 1e5-1e6 cells whose masses are summed, and FFT powers of characteristic functions
lose ~E * 2^-24 relative accuracy in float32, which would silently give wrong privacy numbers.
Importing :mod:`jaxdp` therefore enables ``jax_enable_x64`` (documented in the README).  All
public entry points cast their inputs to float64; float32 inputs are widened (exact), never used
for the computation.
"""

import jax

jax.config.update("jax_enable_x64", True)
