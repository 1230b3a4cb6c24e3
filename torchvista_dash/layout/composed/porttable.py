"""A child cluster's box in its parent's DOT: an HTML-like table of its own size, whole-point cells, a 1-point
cell named after each port where the port is inside the cluster (so dot ends each edge where it goes on
inside, and a stack of identical layers stays one straight column)."""

from __future__ import annotations

import math
from collections.abc import Sequence

MAX_CELL = 65_535  # points: the biggest WIDTH/HEIGHT of a cell Graphviz takes


def port_cells(extent: float, places: Sequence[float]) -> tuple[int, ...]:
    """The start of each port's 1-point cell on a border ``extent`` points long (``places``: the ports' points
    from its start): the border is drawn as a table of whole points, centred on the box, and two ports never
    share a point (a crowded run is pushed along, and back from the far end)."""
    side = math.floor(extent)
    shift = (extent - side) / 2
    starts = [min(max(math.floor(p - shift), 0), max(side - 1, 0)) for p in places]
    order = sorted(range(len(starts)), key=lambda k: (starts[k], k))
    at = 0
    for k in order:
        starts[k] = at = max(starts[k], at)
        at += 1
    end = side
    for k in reversed(order):
        starts[k] = end = min(starts[k], end - 1)
    return tuple(starts)


def cell_centre(extent: float, start: int) -> float:
    """The point (from the border's start) where a port whose cell starts at ``start`` sits."""
    return start + 0.5 + (extent - math.floor(extent)) / 2


def _strip(prefix: str, side: int, starts: Sequence[int], horizontal: bool) -> str:
    """One border of a child cluster: a row (column) of empty cells of whole points, a 1-point cell named
    ``prefix`` + port index where each port is, filler between."""
    cells: list[tuple[str, int]] = []
    at = 0
    for k, st in sorted(enumerate(starts), key=lambda kc: (kc[1], kc[0])):
        if st > at:
            cells.append(("", st - at))
        cells.append((f' PORT="{prefix}{k}"', 1))
        at = st + 1
    if side > at:
        cells.append(("", side - at))
    size = 'WIDTH="{}" HEIGHT="1"' if horizontal else 'WIDTH="1" HEIGHT="{}"'
    tds = [f'<TD {size.format(n)} FIXEDSIZE="TRUE"{port}></TD>' for port, n in _split(cells)]
    body = "<TR>" + "".join(tds) + "</TR>" if horizontal else "".join(f"<TR>{td}</TR>" for td in tds)
    return f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0">{body}</TABLE>'


def _split(cells: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Filler cells cut to at most ``MAX_CELL`` points each (Graphviz ignores a bigger cell size)."""
    out: list[tuple[str, int]] = []
    for port, n in cells:
        while n > MAX_CELL:
            out.append((port, MAX_CELL))
            n -= MAX_CELL
        out.append((port, n))
    return out


def _block(w: int, h: int) -> str:
    """The inside of a child cluster's table: a cell ``w`` × ``h`` points, a grid of cells when a side is over
    ``MAX_CELL`` (an 80-layer model is 270,000 points tall)."""
    cols = [n for _p, n in _split([("", w)])]
    rows = [n for _p, n in _split([("", h)])]
    if len(cols) == 1 and len(rows) == 1:
        return f'<TD WIDTH="{w}" HEIGHT="{h}" FIXEDSIZE="TRUE"></TD>'
    body = "".join(
        "<TR>" + "".join(f'<TD WIDTH="{c}" HEIGHT="{r}" FIXEDSIZE="TRUE"></TD>' for c in cols) + "</TR>"
        for r in rows
    )
    return f'<TD><TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0">{body}</TABLE></TD>'


def port_table(rankdir: str, w: float, h: float, ins: Sequence[int], outs: Sequence[int]) -> str:
    """A child cluster as an HTML-like table of its own size: its in-ports as cells along the side facing the
    first rank, its out-ports along the opposite side, each where the port is inside the cluster. So dot ends
    each edge where the edge goes on inside, and a chain of identical layers (hidden states in at one place,
    out at the same place) stays one straight column instead of stepping sideways layer after layer."""
    horizontal = rankdir in ("TB", "BT")
    wi, hi = math.floor(w), math.floor(h)
    side = wi if horizontal else hi
    strips = [
        (_strip("i", side, ins, horizontal) if ins else None),
        (_strip("o", side, outs, horizontal) if outs else None),
    ]
    if rankdir in ("BT", "RL"):
        strips.reverse()
    first, last = strips
    thick = (first is not None) + (last is not None)
    if horizontal:
        mid = _block(wi, max(hi - thick, 1))
        rows = [
            f"<TR><TD>{first}</TD></TR>" if first else "",
            f"<TR>{mid}</TR>",
            f"<TR><TD>{last}</TD></TR>" if last else "",
        ]
        body = "".join(rows)
    else:
        mid = _block(max(wi - thick, 1), hi)
        body = (
            "<TR>"
            + (f"<TD>{first}</TD>" if first else "")
            + mid
            + (f"<TD>{last}</TD>" if last else "")
            + "</TR>"
        )
    return f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0">{body}</TABLE>>'
