"""Input validation shared by every public entry point.

Convention (see README, "Bad input"):

* Eagerly (concrete values), an invalid argument raises ``ValueError`` naming the argument and
  its valid range.
* Under ``jax.jit`` / ``vmap`` the values are tracers and cannot be inspected; the entry point
  then returns NaN (for epsilon, delta, a trade-off value, a noise scale ...) wherever an input
  is invalid, so that no finite, plausible privacy number is ever produced from bad input.

``check`` returns a boolean array ``ok`` for the second case; ``nan_where_invalid`` applies it.

What does not depend on values is rejected eagerly *and* under tracing, because dtypes and
shapes are static: a boolean, complex, string or None argument is a ``TypeError`` naming it
(``True`` is not silently the number 1), and named arguments whose shapes do not broadcast
together are a ``ValueError`` naming them and their shapes (:func:`check_broadcast`), raised
before any computation.
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

    Returns ``(x, ok)`` with ``x`` as a float64 JAX array (also for ``integer=True``) and ``ok`` a boolean array of the
    same shape.  Concrete invalid input raises ``ValueError`` naming ``name`` and the valid range.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be a number or an array of numbers, got {type(x).__name__}")
    _check_dtype(name, x)
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
        # a concrete value that reached here is valid everywhere: no XLA operation is needed (each
        # one compiles a small program on its first use, ~20 ms apiece in a fresh process)
        return jnp.asarray(a), jnp.asarray(np.ones(a.shape, dtype=bool))
    # Always float64, integers included: accountant numerics need float64 (deltas of 1e-10,
    # log-sums over 1e6 bins; widening float32 is exact), and one dtype per argument means
    # ``num_steps=1000`` and ``num_steps=1000.0`` share one compiled program instead of two.
    # Integer-valued floats are exact up to 2^53, far above every validated count.
    xa = jnp.asarray(x).astype(jnp.float64)
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


def _check_dtype(name: str, x: Any) -> None:
    """Booleans and complex numbers are not numbers here: reject them by dtype (static, so also
    under jit), before numpy or jax coerce them (``True`` -> 1, a complex -> its real part)."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number or an array of numbers, got bool")
    if isinstance(x, (complex, np.complexfloating)):
        raise TypeError(f"{name} must be real, got a complex value")
    dt = getattr(x, "dtype", None)
    if dt is None and isinstance(x, (list, tuple)):
        try:
            dt = np.asarray(x).dtype
        except Exception:  # noqa: BLE001  (ragged / exotic: the numeric check below reports it)
            dt = None
    if dt is not None:
        try:
            dt = np.dtype(dt)
        except TypeError:  # pragma: no cover - exotic dtype objects
            return
        if dt == np.bool_:
            raise TypeError(f"{name} must be a number or an array of numbers, got bool")
        if np.issubdtype(dt, np.complexfloating):
            raise TypeError(f"{name} must be real, got a complex value")


def check_broadcast(**named) -> tuple:
    """Shapes of the named array arguments must broadcast together; returns the common shape.

    ``check_broadcast(a=a, noise_multiplier=s)`` raises ``ValueError`` naming every argument that
    is not a scalar and its shape (eagerly and under tracing: shapes are static), instead of the
    anonymous "incompatible shapes for broadcasting" that a later jnp operation would give.
    ``None`` entries (optional arguments left out) are skipped.
    """
    shapes = {k: tuple(np.shape(v)) for k, v in named.items() if v is not None}
    try:
        return tuple(np.broadcast_shapes(*shapes.values()))
    except ValueError:
        desc = ", ".join(f"{k} {s}" for k, s in shapes.items() if s != ())
        raise ValueError(f"arguments do not broadcast together: {desc} (shapes must be equal or 1 "
                         f"along each axis, aligned from the right)") from None


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


__all__ = ["check", "check_broadcast", "check_choice", "check_static_int", "is_traced", "nan_where_invalid"]

