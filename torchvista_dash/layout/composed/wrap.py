"""Long stacks wrapped into columns: a piece whose children include a long chain of equal layers (48 decoder
layers, 105 expert paths chained by their accumulation) draws them in several columns side by side, read
top to bottom, one column after another, instead of one column hundreds of times taller than wide.

Fitted to a screen, a 48-layer Qwen3-MoE every-op stack in one column is some 200,000 pt tall and 1,200 pt
wide: a 4-pixel sliver. Columns make each wrapped piece about as wide as it is tall (``ASPECT``), so a
fitted view shows every layer's overview label. In dot, the layers of one row share a rank (``rank=same``),
the edge from the foot of one column to the head of the next does not constrain ranks, and one tensor
feeding the layers runs down each column on a trunk of its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

WRAP_MIN = 16  # layers: a shorter stack stays one column (12-layer models read top to bottom as they are)
TALLER_THAN = 4.0  # a stack wraps when one column would be this many times taller than wide ...
# ... and taller than this (points): fitted to a screen about 1,000 pixels tall, a column up to here still
# shows its layers' overview labels, and reads top to bottom without a jump (an 8-layer every-op stack)
WRAP_OVER = 40_000.0
ASPECT = 1.0  # width / height a wrapped stack aims at
GAP = 18.0  # points between columns (dot's nodesep and room for the edges between them)


def chains(pairs: Sequence[tuple[int, int]]) -> list[list[int]]:
    """The stacks that ``pairs`` (layer → next layer, each layer at most once on each side) make, in the
    order of their first layer's appearance among the pairs."""
    nxt = dict(pairs)
    heads = {h for _t, h in pairs}
    out: list[list[int]] = []
    for t, _h in pairs:
        if t in heads:
            continue
        run = [t]
        while run[-1] in nxt:
            run.append(nxt[run[-1]])
        out.append(run)
    return out


def columns(run: Sequence[int], sizes: Sequence[tuple[float, float]], across_first: bool) -> int:
    """How many columns the stack ``run`` (child slots; ``sizes`` per slot, width and height in points) is
    drawn in: 1 unless it is long, tall and much taller than wide. ``across_first``: ranks run down (TB/BT),
    so a column's height is the layers' heights added up; else their widths."""
    m = len(run)
    if m < WRAP_MIN:
        return 1
    w = sum(sizes[s][0 if across_first else 1] for s in run) / m
    h = sum(sizes[s][1 if across_first else 0] for s in run) / m
    if m * h < max(TALLER_THAN * w, WRAP_OVER):
        return 1
    c = max(1, round(math.sqrt(m * h * ASPECT / (w + GAP))))
    rows = math.ceil(m / c)
    return math.ceil(m / rows)


def wrap(
    pairs: Sequence[tuple[int, int]], sizes: Sequence[tuple[float, float]], across_first: bool
) -> tuple[dict[int, tuple[int, int]], set[tuple[int, int]], list[list[int]]]:
    """For the stacks of ``pairs``: each wrapped layer's column (stack number, column number), the pairs
    that jump from the foot of one column to the head of the next, and the rows of every wrapped stack (each
    row's layers share a rank, left to right)."""
    column: dict[int, tuple[int, int]] = {}
    breaks: set[tuple[int, int]] = set()
    heads: list[list[int]] = []
    for k, run in enumerate(chains(pairs)):
        c = columns(run, sizes, across_first)
        if c <= 1:
            continue
        rows = math.ceil(len(run) / c)
        for i, s in enumerate(run):
            column[s] = (k, i // rows)
        # row by row: the r-th layer of every column on one rank, in column order (a grid: with only the
        # heads held, wide layers of one column would slide under the next column's narrow ones)
        heads.extend([run[i] for i in range(r, len(run), rows)] for r in range(rows))
        breaks.update((run[i - 1], run[i]) for i in range(rows, len(run), rows))
    return column, breaks, heads
