"""Input validation shared by every public entry point.

Convention (see README, "Bad input"):

* Eagerly (concrete values), an invalid argument raises ``ValueError`` naming the argument and
  its valid range.
* Under ``jax.jit`` / ``vmap`` the values are tracers and cannot be inspected; the entry point
  then returns NaN (for epsilon, delta, a trade-off value, a noise scale ...) wherever an input
  is invalid, so that no finite, plausible privacy number is ever produced from bad input.

``check`` returns a boolean array ``ok`` for the second case; ``nan_where_invalid`` applies it.
"""

from __future__ import annotations


from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def is_traced(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)


def _fmt_range(lo, hi, lo_open, hi_open, allow_inf=False) -> str:
    left = "(" if (lo_open or lo is None) else "["
    right = ")" if (hi_open or (hi is None and not allow_inf)) else "]"
    lo_s = "-inf" if lo is None else f"{lo:g}"
    hi_s = "inf" if hi is None else f"{hi:g}"
    return f"{left}{lo_s}, {hi_s}{right}"


def check(
    name: str,
    x: Any,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    integer: bool = False,
    allow_inf: bool = False,
):
    """Validate a numeric argument.

    Returns ``(x, ok)`` with ``x`` as a float64 (or int) JAX array and ``ok`` a boolean array of the
    same shape.  Concrete invalid input raises ``ValueError`` naming ``name`` and the valid range.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be a number or an array of numbers, got {type(x).__name__}")
    if not is_traced(x):
        try:
            arr = np.asarray(x)
        except Exception as e:  # pragma: no cover - exotic objects
            raise TypeError(f"{name} must be numeric: {e}") from None
        if arr.dtype == object or not (
            np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
        ):
            raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
        if np.iscomplexobj(arr):
            raise TypeError(f"{name} must be real, got a complex value")
        if arr.size == 0:
            raise ValueError(f"{name} is empty; expected at least one value")
        a = arr.astype(np.float64)
        bad = np.isnan(a)
        if not allow_inf:
            bad |= np.isinf(a)
        if lo is not None:
            bad |= (a <= lo) if lo_open else (a < lo)
        if hi is not None:
            bad |= (a >= hi) if hi_open else (a > hi)
        if integer:
            bad |= np.isfinite(a) & (a != np.round(a))
        if bad.any():
            first = float(a[bad].ravel()[0])
            what = "an integer in " if integer else "in "
            raise ValueError(
                f"{name} must be {what}{_fmt_range(lo, hi, lo_open, hi_open, allow_inf)}, got {first!r}"
            )
    xa = jnp.asarray(x)
    if not integer:
        if xa.dtype == jnp.float32 or xa.dtype == jnp.float16 or xa.dtype == jnp.bfloat16:
            # Accountant numerics need float64 (e.g. deltas of 1e-10, log-sums over 1e6 bins).
            # Widening a float32 input is exact, so we widen rather than compute in float32.
            xa = xa.astype(jnp.float64)
        else:
            xa = xa.astype(jnp.float64)
    ok = ~jnp.isnan(xa)
    if not allow_inf:
        ok &= jnp.isfinite(xa)
    if lo is not None:
        ok &= (xa > lo) if lo_open else (xa >= lo)
    if hi is not None:
        ok &= (xa < hi) if hi_open else (xa <= hi)
    if integer:
        ok &= xa == jnp.round(xa)
    return xa, ok


def nan_where_invalid(value, ok):
    """NaN wherever ``ok`` is False (broadcasting), so traced bad input never yields a number."""
    return jnp.where(ok, value, jnp.nan)


def check_choice(name: str, value: Any, choices) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)!r}, got {value!r}")
    return value


def check_static_int(name: str, value: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a Python int (a static setting), got {type(value).__name__}")
    if value < lo or (hi is not None and value > hi):
        raise ValueError(f"{name} must be an integer in [{lo}, {hi if hi is not None else 'inf'}], got {value}")
    return int(value)


__all__ = ["check", "check_choice", "check_static_int", "is_traced", "nan_where_invalid"]

