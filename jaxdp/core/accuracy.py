"""Accuracy targets instead of grids: the discretisation chosen from the certified width asked for.

``accuracy`` is the **relative width of the certified bracket** on the returned quantity,
``(upper - lower) / upper``: the truth lies in ``[lower, upper]``, the entry points return
``upper`` (a sound bound at any grid), so ``accuracy`` bounds how much the returned value can
overstate the truth.  It is not the error of the value itself, which is usually far smaller (the
bracket's width is set by the certified lower end: at the default, ``eps(1e-5)`` at q = 0.01,
sigma = 1, T = 1000 is returned within 2e-5 of a 2^18-cell reference while its bracket is 0.8% wide).

How a grid is chosen (:func:`refine`): the rungs of :data:`LADDER` are PLD grids of growing size.
The first rung tried is the coarsest whose bracket met ``accuracy`` at the reference query of
:data:`REFERENCE_WIDTHS` (so a typical query costs one rung); every value whose bracket is wider
than asked is recomputed on the next rung, and only those, while a rung still narrows the bracket
(by a third at least: a delta below the FFT's float floor, say, is not narrowed by any grid).
Where no rung meets the target the tightest bracket found is returned (still sound) with a warning.

Refinement needs concrete values.  Inside ``jit``, ``grad`` or ``vmap`` (traced arguments) a bracket
width cannot be inspected, so the first rung alone is used; its width is what the ``*_bracket``
entry points report.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._grid import Grid

#: The default target: a certified bracket at most 1% wide (relative).
DEFAULT_ACCURACY = 1e-2

#: Grids tried in turn, coarsest first (one-stage below 2^18 cells, two-stage from 2^18 on).
LADDER = (Grid(size=2**14, stages=1), Grid(size=2**16, stages=1), Grid(size=2**18), Grid(size=2**20))

#: Relative bracket width of Poisson eps(1e-5) at q = 0.01, sigma = 1, T = 1000 on each rung of
#: :data:`LADDER` (``python benchmarks/accuracy_ladder.py``; ``tests/core/test_accuracy.py``
#: recomputes the first two).  Only the choice of the first rung rests on them, never a bound.
REFERENCE_WIDTHS = (2.94e-2, 7.71e-3, 4.90e-4, 1.35e-4)


_ENTRY_POINT_DOC = """
    ``accuracy`` (default :data:`jaxdp.core.accuracy.DEFAULT_ACCURACY`, 1e-2): the relative width of
    the certified bracket to reach, ``(upper - lower) / upper``; the grid is chosen for it, coarse
    first and refined only where the bracket is wider (:mod:`jaxdp.core.accuracy`; under ``jit``,
    ``grad`` or ``vmap`` the first grid is used unchecked).  ``grid``: a fixed
    :class:`~jaxdp.core.pld.Grid` instead (experts); the two exclude each other.
"""


def document(fn):
    """Append the ``accuracy=`` / ``grid=`` paragraph to an entry point's docstring (one text for all)."""
    fn.__doc__ = fn.__doc__.rstrip() + "\n" + _ENTRY_POINT_DOC
    return fn


def check_accuracy(accuracy) -> float:
    """``accuracy`` as a float in (0, 1), or ``ValueError`` naming it."""
    if isinstance(accuracy, bool) or not isinstance(accuracy, (int, float, np.floating, np.integer)):
        raise TypeError(f"accuracy must be a number in (0, 1), got {type(accuracy).__name__}")
    a = float(accuracy)
    if not 0.0 < a < 1.0:
        raise ValueError(f"accuracy must lie in (0, 1) (relative width of the certified bracket), got {accuracy!r}")
    return a


def resolve(grid, accuracy):
    """``(grid, accuracy)`` of an entry point that takes both: an explicit ``grid`` (experts) is used as
    given and excludes ``accuracy``; with neither, :data:`DEFAULT_ACCURACY`."""
    if grid is not None:
        if accuracy is not None:
            raise ValueError("pass either grid= (a fixed discretisation) or accuracy= (a target the grid is chosen for), not both")
        if not isinstance(grid, Grid):
            raise TypeError(f"grid must be a jaxdp.core.pld.Grid, got {type(grid).__name__}")
        return grid, None
    return None, check_accuracy(DEFAULT_ACCURACY if accuracy is None else accuracy)


def first_rung(accuracy: float) -> int:
    """Index in :data:`LADDER` of the coarsest grid whose reference width meets ``accuracy``."""
    for i, w in enumerate(REFERENCE_WIDTHS):
        if w <= accuracy:
            return i
    return len(LADDER) - 1


def relative_width(lower, upper):
    """``(upper - lower) / upper`` (0 where both are 0; NaN where upper is NaN; NaN where it is infinite)."""
    lower, upper = np.asarray(lower, np.float64), np.asarray(upper, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = (upper - lower) / np.abs(upper)
    return np.where((upper == 0) & (lower == 0), 0.0, w)


def too_wide(lower, upper, accuracy):
    """Where a bracket is wider than ``accuracy`` (a NaN upper end, invalid input, never is)."""
    return ~(relative_width(lower, upper) <= accuracy) & ~np.isnan(np.asarray(upper, np.float64))


def narrowed(before, after):
    """Where a finer rung narrowed a relative width by a third at least (or the width is not a number,
    e.g. an infinite upper end that a finer grid may make finite): elsewhere the width is held by
    something no grid moves (e.g. a delta below the FFT's float floor), so refining stops."""
    return ~(after > before / 1.5)


def _bucket(m: int, n: int) -> int:
    """Batch size of a refinement of ``m`` of ``n`` values: a power of two (few compiled shapes)."""
    return min(n, 1 << max(m - 1, 0).bit_length())


def refine(bracket_at, args, accuracy: float, first=None):
    """Certified ``(lower, upper)`` whose relative width meets ``accuracy`` wherever a rung allows it.

    ``bracket_at(grid, *args)`` returns ``(lower, upper)`` elementwise over ``args`` (concrete
    arrays that broadcast together; a NaN upper end marks invalid input and is left alone).
    ``first``: the ``(lower, upper)`` of the first rung (:func:`first_rung`) when the caller has it
    already (e.g. computed once per parameter set rather than per broadcast entry).
    Returns numpy arrays of the broadcast shape.
    """
    i0 = first_rung(accuracy)
    arrs = np.broadcast_arrays(*[np.asarray(a, np.float64) for a in args])
    shape = arrs[0].shape
    flat = [a.reshape(-1) for a in arrs]
    if first is None:
        first = bracket_at(LADDER[i0], *(a.reshape(shape) for a in flat))
    lo, up = (np.array(np.broadcast_to(np.asarray(x, np.float64), shape)).reshape(-1) for x in first)
    n = lo.size
    live = np.ones(n, bool)  # still worth refining
    for grid in LADDER[i0 + 1:]:
        idx = np.flatnonzero(live & too_wide(lo, up, accuracy))
        if idx.size == 0:
            break
        pad = np.concatenate([idx, np.full(_bucket(idx.size, n) - idx.size, idx[0])])
        l2, u2 = (np.array(x, np.float64).reshape(-1)[: idx.size] for x in bracket_at(grid, *(a[pad] for a in flat)))
        before = relative_width(lo[idx], up[idx])
        # a finer rung's bracket is sound too; keep the tighter end of each
        lo[idx], up[idx] = np.maximum(lo[idx], l2), np.minimum(up[idx], u2)
        live[idx] = narrowed(before, relative_width(lo[idx], up[idx]))
    bad = too_wide(lo, up, accuracy)
    if bad.any():
        worst = float(np.nanmax(np.where(bad, relative_width(lo, up), -np.inf)))
        warnings.warn(
            f"{int(bad.sum())} of {n} values have a certified bracket wider than accuracy={accuracy:g} "
            f"(widest {worst:.3g}) on the finest grid tried; the returned upper ends are still sound bounds", RuntimeWarning, stacklevel=3)
    return lo.reshape(shape), up.reshape(shape)
