"""Cutting the picture into tiles: a grid over its canvas, each element put into every tile it may draw in.

Why (bench/bench_zoom_parts.py measures it, docs/performance.md has the figures): at every zoom or pan step
the browser restyles, lays out and repaints a whole SVG image drawn at a new size, its off-screen parts and
hidden labels included. Cut into tiles, one plotly layout image each, a step costs only the tiles on screen:
Chromium does not draw an image outside the plot, so it never restyles it either.

Tiles overlap by ``OVERLAP`` points, and an element near a border is in both tiles, so neighbours draw the
same pixels there and no seam shows between them.
"""

from __future__ import annotations

import math

import numpy as np

from torchvista_dash.layout.types import Box

Item = tuple[Box, str]  # where an element may draw (points, y up), and its SVG text
Cell = tuple[int, int]  # (column from the left, row from the top)
OVERLAP = 1.0  # points each tile reaches into its neighbours


# Tiles pay at zoom and cost at load: every image is a request, a parse and a restyle for the browser (a
# 6-layer Llama every op cut into 182 tiles loads 3-4x slower than as one image; bench/bench_vs_torchvista.py
# measures page loads). So a view under MIN_TILED_BOXES boxes is one image, and a bigger one has at most
# MAX_TILES, their side grown to fit.
MIN_TILED_BOXES = 1000
MAX_TILES = 24


class Grid:
    """A grid of about ``tile`` points square over ``inner`` (default: ``ext``), its outer rows and columns
    reaching out to ``ext``'s edges (the canvas's padding, where only big overview labels draw); one cell (the
    whole canvas) when ``tile`` is None or ``inner`` fits one tile."""

    def __init__(self, ext: Box, tile: float | None, inner: Box | None = None) -> None:
        self.ext = ext
        ix0, iy0, ix1, iy1 = inner or ext
        ix0, iy0 = max(ix0, ext[0]), max(iy0, ext[1])
        ix1, iy1 = min(ix1, ext[2]), min(iy1, ext[3])
        w, h = max(ix1 - ix0, 0.0), max(iy1 - iy0, 0.0)
        self.nx = 1 if tile is None else max(1, math.ceil(w / tile - 1e-9))
        self.ny = 1 if tile is None else max(1, math.ceil(h / tile - 1e-9))
        # cuts in points from the canvas's left and top edges: the inner region's, the outer cells to the
        # edges
        self.xcuts = [0.0] + [ix0 - ext[0] + w * k / self.nx for k in range(1, self.nx)] + [ext[2] - ext[0]]
        self.ycuts = [0.0] + [ext[3] - iy1 + h * k / self.ny for k in range(1, self.ny)] + [ext[3] - ext[1]]

    @classmethod
    def bounded(cls, ext: Box, inner: Box, tile: float | None, boxes: int) -> Grid:
        """The grid a view of ``boxes`` boxes is drawn in: one cell below MIN_TILED_BOXES, else tiles of at
        least ``tile`` points, grown until there are at most MAX_TILES."""
        if tile is None or boxes < MIN_TILED_BOXES:
            return cls(ext, None)
        grid = cls(ext, tile, inner)
        while len(grid) > MAX_TILES:
            tile *= 1.15
            grid = cls(ext, tile, inner)
        return grid

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

        def at(cuts: list[float], k: int, grow: float) -> float:
            if k == 0:
                return 0.0
            if k == len(cuts) - 1:
                return round(cuts[k], 1)
            return round(cuts[k] + grow, 1)

        left, right = at(self.xcuts, i, -ov), at(self.xcuts, i + 1, ov)
        top, bottom = at(self.ycuts, j, -ov), at(self.ycuts, j + 1, ov)
        return (x0 + left, y1 - bottom, x0 + right, y1 - top)

    def sort(self, layers: list[list[Item]]) -> dict[Cell, list[list[str]]]:
        """Per cell that anything draws in: each layer's elements that may draw there, in their order. The
        cells an element spans are found for all of a layer's elements at once (``_spans``): one by one, that
        is about a sixth of an 80-layer view's figure (bench/bench_figure_build.py)."""
        n = len(layers)
        if len(self) == 1:
            return {(0, 0): [[text for _, text in items] for items in layers]} if any(layers) else {}
        out: dict[Cell, list[list[str]]] = {}
        for li, items in enumerate(layers):
            if not items:
                continue
            i0, i1, j0, j1 = self._spans([box for box, _ in items])
            for a, b, c, d, (_, text) in zip(i0, i1, j0, j1, items, strict=True):
                for i in range(a, b + 1):
                    for j in range(c, d + 1):
                        cell = out.get((i, j))
                        if cell is None:
                            cell = out[(i, j)] = [[] for _ in range(n)]
                        cell[li].append(text)
        return out

    def _spans(self, boxes: list[Box]) -> tuple[list[int], list[int], list[int], list[int]]:
        """First and last column, first and last row of the cells each box (points, y up) may draw in,
        ``OVERLAP`` included."""
        x0, _, _, y1 = self.ext
        b = np.asarray(boxes, dtype=np.float64)
        xcuts, ycuts = np.asarray(self.xcuts), np.asarray(self.ycuts)

        def cell(cuts: np.ndarray, at: np.ndarray) -> list[int]:
            return np.clip(np.searchsorted(cuts, at, side="right") - 1, 0, len(cuts) - 2).tolist()

        return (
            cell(xcuts, b[:, 0] - x0 - OVERLAP),
            cell(xcuts, b[:, 2] - x0 + OVERLAP),
            cell(ycuts, y1 - b[:, 3] - OVERLAP),
            cell(ycuts, y1 - b[:, 1] + OVERLAP),
        )
