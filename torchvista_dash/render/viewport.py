"""Where things are on screen: the axis ranges a view is shown at, how many pixels a point is drawn at
there, and where a view starts; kept steady across clicks and zooms.

Plain arithmetic on a Layout and plotly's relayout events, without Dash or plotly, so the figure, the app and
the page's first picture share it and keep-in-place is tested without a browser. Dash does not send the plot's
size in pixels: ``scale`` takes a plot of ``NOMINAL_PLOT_PX`` unless the caller knows better.
"""

from __future__ import annotations

from typing import Any

from torchvista_dash.layout.types import Box, Layout
from torchvista_dash.render.svg.picture import LOD_SCALE, extent

MARGIN = 20.0  # layout units around the picture when fitting to screen
PAD = 12.0  # points around the graph in the initial view
NOMINAL_PLOT_PX = (1100.0, 700.0)  # the plot's size (CSS px) assumed where the browser has not told it
# px per point a too-big view starts at: op names and shape lines drawn, also in a plot somewhat smaller than
# the nominal one
START_SCALE = LOD_SCALE["s"] * 1.15
# px per point from which a view counts as readable (op names drawn) at the nominal plot size: a notch above
# the level of detail's threshold, since real plots are smaller (about 1000 x 650 px in a 1400 x 900 window
# with the details panel, 950 x 550 on a 1366 x 768 laptop): at the bare threshold a view such as CLIP's
# default one shows no text in them
READABLE_SCALE = LOD_SCALE["o"] * 1.15

Ranges = list[list[float]]  # [[x0, x1], [y0, y1]]


def scale(ranges: Ranges, plot_px: tuple[float, float] = NOMINAL_PLOT_PX) -> float:
    """Pixels per point when ``ranges`` fill a plot of ``plot_px`` (equal aspect: the tighter axis
    decides)."""
    return min(
        plot_px[0] / max(ranges[0][1] - ranges[0][0], 1e-9),
        plot_px[1] / max(ranges[1][1] - ranges[1][0], 1e-9),
    )


def fit_scale(bounds: Box) -> float:
    """Pixels per point when ``bounds`` (plus ``PAD``) fills the nominal plot area."""
    w = max(bounds[2] - bounds[0] + 2 * PAD, 1.0)
    h = max(bounds[3] - bounds[1] + 2 * PAD, 1.0)
    return scale([[0.0, w], [0.0, h]])


def start_window(layout: Layout, bounds: Box | None = None) -> Box | None:
    """Where a view too big to read when fitted starts: a window on its first rank (top in TB, left in LR) at
    a scale where op names and shape lines are drawn, fitted across the ranks when that still reads, else
    centred on the first rank's first box. ``None`` when the whole view fits the plot readably (then it starts
    whole).

    A 32-layer every-op view fitted whole is a few pixels per box and shows no text at all; users of map-like
    viewers expect to start readable and pan, with "fit to screen" one click away."""
    bounds = extent(layout, 0.0) if bounds is None else bounds  # the drawing's extent, when the caller has it
    if not layout.nodes or fit_scale(bounds) >= READABLE_SCALE:
        return None
    down = layout.rankdir in ("TB", "BT")
    x0, y0, x1, y1 = bounds[0] - PAD, bounds[1] - PAD, bounds[2] + PAD, bounds[3] + PAD
    across_px, across = (NOMINAL_PLOT_PX[0], x1 - x0) if down else (NOMINAL_PLOT_PX[1], y1 - y0)
    px = max(START_SCALE, min(across_px / max(across, 1.0), 1.0))
    w, h = NOMINAL_PLOT_PX[0] / px, NOMINAL_PLOT_PX[1] / px
    first = {"TB": lambda b: -b[3], "BT": lambda b: b[1], "LR": lambda b: b[0], "RL": lambda b: -b[2]}[
        layout.rankdir
    ]
    fb = min(layout.nodes.values(), key=lambda b: (first(b), b[0], b[1]))
    cx, cy = (fb[0] + fb[2]) / 2, (fb[1] + fb[3]) / 2

    def place(lo: float, hi: float, size: float, centre: float, start: float | None) -> tuple[float, float]:
        if size >= hi - lo:  # the whole extent fits this way: centre it
            mid = (lo + hi) / 2
            return mid - size / 2, mid + size / 2
        a = start if start is not None else min(max(centre - size / 2, lo), hi - size)
        return a, a + size

    rd = layout.rankdir
    wx = place(x0, x1, w, cx, {"LR": x0, "RL": x1 - w}.get(rd))
    wy = place(y0, y1, h, cy, {"TB": y1 - h, "BT": y0}.get(rd))
    return (round(wx[0], 1), round(wy[0], 1), round(wx[1], 1), round(wy[1], 1))


def full_ranges(layout: Layout) -> Ranges:
    return [[-MARGIN, layout.width + MARGIN], [-MARGIN, layout.height + MARGIN]]


def start_ranges(layout: Layout) -> Ranges:
    """Where a new view starts: the whole graph, or for one too big to read whole, a readable window on its
    first rank (``start_window``); "fit to screen" still shows it whole (``full_ranges``)."""
    win = start_window(layout)
    if win is None:
        return full_ranges(layout)
    return [[win[0], win[2]], [win[1], win[3]]]


def box_of(layout: Layout, vid: str | None) -> Box | None:
    if vid is None:
        return None
    if vid in layout.clusters:
        return layout.clusters[vid]
    return layout.nodes.get(vid)


def anchor_of(layout: Layout, vid: str | None) -> tuple[float, float] | None:
    """The point of a box that should stay put on screen: its top centre (where a cluster's header is)."""
    box = box_of(layout, vid)
    if box is None:
        return None
    x0, y0, x1, y1 = box
    return ((x0 + x1) / 2.0, y1)


def shift(ranges: Ranges, dx: float, dy: float) -> Ranges:
    return [[ranges[0][0] + dx, ranges[0][1] + dx], [ranges[1][0] + dy, ranges[1][1] + dy]]


def keep_inside(ranges: Ranges, point: tuple[float, float], margin: float = 0.06) -> Ranges:
    """Shift the view just enough that ``point`` (a header) is a margin inside it: at the very edge of the
    plot a click would start an axis drag instead of reaching the header."""
    (x0, x1), (y0, y1) = ranges
    mx, my = (x1 - x0) * margin, (y1 - y0) * margin
    dx = min(0.0, point[0] - (x0 + mx)) + max(0.0, point[0] - (x1 - mx))
    dy = min(0.0, point[1] - (y0 + my)) + max(0.0, point[1] - (y1 - my))
    return shift(ranges, dx, dy) if (dx or dy) else ranges


def centre_on(ranges: Ranges, layout: Layout, vid: str | None) -> Ranges:
    """Same zoom, ``vid``'s box in the middle."""
    box = box_of(layout, vid)
    if box is None:
        return ranges
    cx, cy = (box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0
    mx, my = (ranges[0][0] + ranges[0][1]) / 2.0, (ranges[1][0] + ranges[1][1]) / 2.0
    return shift(ranges, cx - mx, cy - my)


def ranges_from_relayout(relayout: dict[str, Any] | None, current: Ranges, full: Ranges) -> Ranges:
    """The ranges the user is looking at, from plotly's last relayout event (zoom, pan, double-click
    reset)."""
    if not relayout:
        return current
    if relayout.get("xaxis.autorange") or relayout.get("yaxis.autorange"):
        return full
    xr = _axis_range(relayout, "xaxis")
    yr = _axis_range(relayout, "yaxis")
    if xr is not None and yr is not None:
        return [xr, yr]
    if yr is not None:  # only y reported: keep the aspect ratio about x's centre
        return [_scaled(current[0], (yr[1] - yr[0]) / max(current[1][1] - current[1][0], 1e-9)), yr]
    if xr is not None:
        return [xr, _scaled(current[1], (xr[1] - xr[0]) / max(current[0][1] - current[0][0], 1e-9))]
    return current


def is_echo(relayout: dict[str, Any] | None, sent: list[Ranges]) -> bool:
    """True when a relayout event only reports ranges the server itself sent, after plotly stretched one axis
    to keep the aspect ratio (it does so around the centre): not a user zoom or pan."""
    if not relayout:
        return False
    xr, yr = _axis_range(relayout, "xaxis"), _axis_range(relayout, "yaxis")
    if xr is None or yr is None:
        return False
    for sx, sy in sent:
        if (_close(yr, sy) and _close([_mid(xr)] * 2, [_mid(sx)] * 2)) or (
            _close(xr, sx) and _close([_mid(yr)] * 2, [_mid(sy)] * 2)
        ):
            return True
    return False


def _mid(r: list[float]) -> float:
    return (r[0] + r[1]) / 2.0


def _close(a: list[float], b: list[float], tol: float = 1e-3) -> bool:
    return abs(a[0] - b[0]) <= tol * max(1.0, abs(b[0])) and abs(a[1] - b[1]) <= tol * max(1.0, abs(b[1]))


def _axis_range(relayout: dict[str, Any], axis: str) -> list[float] | None:
    if f"{axis}.range[0]" in relayout and f"{axis}.range[1]" in relayout:
        return [float(relayout[f"{axis}.range[0]"]), float(relayout[f"{axis}.range[1]"])]
    r = relayout.get(f"{axis}.range")
    if isinstance(r, (list, tuple)) and len(r) == 2:
        return [float(r[0]), float(r[1])]
    return None


def _scaled(r: list[float], factor: float) -> list[float]:
    c, half = (r[0] + r[1]) / 2.0, (r[1] - r[0]) / 2.0 * factor
    return [c - half, c + half]
