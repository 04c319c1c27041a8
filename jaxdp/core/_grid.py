"""The static discretisation settings of the PLD engine (:class:`Grid`): they fix array shapes."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Grid:
    """Static discretisation settings (they decide array shapes, so they are not traced).

    size: number of lattice points of each single-step pmf and of the composed window (FFT length).
    tail: target mass outside the single-step grid, per step (placement only; always accounted).
    window_tail: target mass of the composed law outside the output window (Chernoff level).
    hoeffding_eta: failure probability used for the lower (optimistic) bound, relative to the
        delta being bounded when converting eps(delta) (there the best of ``eta * {0.01, 0.1, 1,
        10, 100}`` is taken: each gives a valid bound); absolute for delta(eps) and curves.
    differentiate_lattice: let autodiff see how the lattice moves with the parameters (through the
        mechanism's range hint), so gradients are those of the function computed (they then match
        finite differences); switch off for mechanisms whose range hint is not differentiable.
    stages: composition of a single ``(mechanism, count)`` component in one FFT power (1) or in two
        (2: ``k1`` steps on a fine lattice, that law discretised again onto the coarse lattice of
        the full window and raised to the power ``count // k1``; see :func:`compose`).  With 2 the
        split is chosen at run time from the Chernoff windows, and one stage is used whenever the
        two-stage bracket would not be narrower (e.g. few steps).  ``"auto"`` (default): 2 when
        ``size >= 2**18`` (about 1.5x the cost, brackets up to 10x narrower for 1e5 steps),
        else 1 (small grids keep their cost).  Several components always use one stage.
    coarse_size: points of the coarse single-step law that places the Chernoff windows (``"auto"``:
        see :meth:`coarse_points`); only placement depends on it, every bound is recomputed on the
        real lattice.
    fine_factor: two-stage composition only: the fine (first) stage uses ``fine_factor * size``
        lattice points (default 2), and so does the returned PLD (a two-stage result, which lives on
        ``size`` coarse points, is padded with zeros).  The fine spacing ``h_1`` sets the lower
        bound's shift (``T h_1^2`` dominates it), so 2 halves the bracket width of long compositions
        (e.g. 1.38% -> 0.7% at q = 1e-4, T = 1e5, sigma = 0.5, delta = 1e-5) for about 1.5x the cost.
    """

    size: int = 2**18
    tail: float = 1e-20
    window_tail: float = 1e-17
    hoeffding_eta: float = 1e-3
    hoeffding_eta_abs: float = 1e-14
    num_chernoff: int = 192
    coarse_size: object = "auto"
    differentiate_lattice: bool = True
    stages: object = "auto"
    fine_factor: int = 2

    def coarse_points(self) -> int:
        """Points of the coarse single-step law that only places windows (no certificate rests on it).

        ``"auto"``: the largest power of two <= size / 8, clipped to [2048, 8192] (8192 from 2^16 on;
        smaller grids keep it in proportion: at 3 * 2^13 cells 2048 points move eps by < 5e-7
        relative and save 20% of a Poisson eps(delta) sweep).
        """
        if self.coarse_size == "auto":
            return int(min(8192, max(2048, 1 << max(int(self.size // 8).bit_length() - 1, 0))))
        if not isinstance(self.coarse_size, int) or self.coarse_size < 16:
            raise ValueError(f"Grid.coarse_size must be 'auto' or an integer >= 16, got {self.coarse_size!r}")
        return int(self.coarse_size)

    def fine_points(self) -> int:
        """Lattice points of the fine stage of a two-stage composition (``fine_factor * size``)."""
        if not isinstance(self.fine_factor, int) or self.fine_factor < 1:
            raise ValueError(f"Grid.fine_factor must be an integer >= 1, got {self.fine_factor!r}")
        return int(self.fine_factor * self.size)

    def num_stages(self) -> int:
        if self.stages == "auto":
            return 2 if self.size >= 2**18 else 1
        if self.stages not in (1, 2):
            raise ValueError(f"Grid.stages must be 1, 2 or 'auto', got {self.stages!r}")
        return int(self.stages)


DEFAULT_GRID = Grid()
