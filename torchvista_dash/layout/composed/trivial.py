"""Pieces with one child laid out without dot: the child, its ports just beyond its two ends, straight edges.

Most open calls deep in a model hold one box (an expanded ``Linear`` holds its ``linear`` op): a dot process
for each level of them would cost a process start for a drawing that has one answer.
"""

from __future__ import annotations

import numpy as np

from torchvista_dash.layout.composed.piecedot import PORT_SIZE
from torchvista_dash.layout.composed.pieceread import KEEP, PieceLayout, from_frame
from torchvista_dash.layout.composed.porttable import cell_centre
from torchvista_dash.layout.types import Point

PORT = PORT_SIZE * 72  # points


def lay_out_single(key: tuple) -> PieceLayout | None:
    """The layout of a one-child piece (None for any other): in-ports above the child where its edges meet
    it (a child cluster's own port places), out-ports below, in the frame where ranks run down."""
    rankdir, children, n_in, n_out, specs = key
    if len(children) != 1:
        return None
    (w, h), in_cells, out_cells = children[0]
    along, across = (h, w) if rankdir in ("TB", "BT") else (w, h)
    top = (PORT + KEEP if n_in else 0.0) + along + (PORT + KEEP if n_out else 0.0)
    y0 = PORT + KEEP if n_out else 0.0  # the child's lower end
    centre: Point = (across / 2, y0 + along / 2)
    # where each port meets the child: its cell's middle on a child cluster, else spread across the child
    ins = [s for s in specs if s[0] != 0]
    outs = [s for s in specs if s[0] == 0]
    port_u: dict[int, float] = {}
    for group, cells, ends in ((ins, in_cells, 4), (outs, out_cells, 3)):
        for k, spec in enumerate(group):
            place = spec[ends]
            slot = spec[0] if group is ins else spec[1]
            if cells and place >= 0:
                at = cell_centre(across, cells[place])  # from the left (TB/BT) or the top (LR/RL)
                port_u[slot] = at if rankdir in ("TB", "BT") else across - at
            else:
                port_u[slot] = across * (k + 1) / (len(group) + 1)
    n = 1
    pts: list[Point] = [centre]
    pts += [(port_u.get(s, across / 2), top) for s in range(n, n + n_in)]
    pts += [(port_u.get(s, across / 2), 0.0) for s in range(n + n_in, n + n_in + n_out)]
    lines: list[list[Point]] = []
    for tail, head, *_rest in specs:
        if tail == 0:
            u = pts[head][0]
            lines.append([(u, y0), (u, 0.0)])
        else:
            u = pts[tail][0]
            lines.append([(u, top), (u, y0 + along)])
    back = from_frame(rankdir, top)
    flat = [back(p) for line in lines for p in line]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    width, height = (across, top) if rankdir in ("TB", "BT") else (top, across)
    return PieceLayout(
        round(width, 2),
        round(height, 2),
        tuple(back(p) for p in pts),
        np.array(flat, dtype=float).reshape(-1, 2),
        tuple(starts),
    )
