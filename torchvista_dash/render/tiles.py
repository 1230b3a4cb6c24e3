"""Cutting the picture into tiles: a grid over its canvas, each element put into every tile it may draw in.

Why (measured in bench/bench_zoom_parts.py, see the README): at every zoom or pan step the browser restyles, lays
out and repaints a whole SVG image drawn at a new size, its off-screen parts and hidden labels included. Cut
into tiles, one plotly layout image each, a step costs only the tiles on screen: Chromium does not draw an
image outside the plot, so it never restyles it either.

Tiles overlap by ``OVERLAP`` points, and an element near a border is in both tiles, so neighbours draw the
same pixels there and no seam shows between them.
"""

from __future__ import annotations

import math

from ..layout.types import Box

Item = tuple[Box, str]      # where an element may draw (points, y up), and its SVG text
Cell = tuple[int, int]      # (column from the left, row from the top)
OVERLAP = 1.0               # points each tile reaches into its neighbours


class Grid:
    """A grid of about ``tile`` points square over ``ext``; one cell (the whole canvas) when ``tile`` is None
    or the canvas fits one tile."""

    def __init__(self, ext: Box, tile: float | None) -> None:
        self.ext = ext
        w, h = ext[2] - ext[0], ext[3] - ext[1]
        self.nx = 1 if tile is None else max(1, math.ceil(w / tile - 1e-9))
        self.ny = 1 if tile is None else max(1, math.ceil(h / tile - 1e-9))
        self.cw, self.ch = w / self.nx, h / self.ny

    def __len__(self) -> int:
        return self.nx * self.ny

    def box(self, cell: Cell) -> Box:
        """The cell's box in points, with its overlap (none at the canvas's edges), on a tenth of a point from
        the canvas's corner (what the SVG's numbers hold, so the image and its viewBox agree)."""
        if len(self) == 1:
            return self.ext
        i, j = cell
        x0, _, _, y1 = self.ext
        ov = OVERLAP

        def at(k: int, n: int, size: float, grow: float) -> float:
            if k == 0:
                return 0.0
            if k == n:
                return round(size * n, 1)
            return round(k * size + grow, 1)

        left = at(i, self.nx, self.cw, -ov)
        right = at(i + 1, self.nx, self.cw, ov)
        top = at(j, self.ny, self.ch, -ov)
        bottom = at(j + 1, self.ny, self.ch, ov)
        return (x0 + left, y1 - bottom, x0 + right, y1 - top)

    def _span(self, lo: float, hi: float, size: float, n: int) -> range:
        a = max(0, min(n - 1, math.floor((lo - OVERLAP) / size)))
        b = max(0, min(n - 1, math.floor((hi + OVERLAP) / size)))
        return range(a, b + 1)

    def sort(self, layers: list[list[Item]]) -> dict[Cell, list[list[str]]]:
        """Per cell that anything draws in: each layer's elements that may draw there, in their order."""
        out: dict[Cell, list[list[str]]] = {}
        x0, _, _, y1 = self.ext
        n = len(layers)
        for li, items in enumerate(layers):
            for (bx0, by0, bx1, by1), text in items:
                for i in self._span(bx0 - x0, bx1 - x0, self.cw, self.nx):
                    for j in self._span(y1 - by1, y1 - by0, self.ch, self.ny):
                        cell = out.get((i, j))
                        if cell is None:
                            cell = out[(i, j)] = [[] for _ in range(n)]
                        cell[li].append(text)
        return out
