"""Colours, shapes and label text per node kind and theme, shared by the plotly figure, the Graphviz export
and the app's page.

One table so the interactive figure, the static SVG/PNG/PDF and the page around them look the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchvista_dash.model.options import THEMES, ThemeName
from torchvista_dash.view.types import VisibleKind, VisibleNode

__all__ = [
    "CLOSE_MARK",
    "OPEN_MARK",
    "SHAPES",
    "THEMES",
    "KindStyle",
    "Theme",
    "get_theme",
    "kind_style",
    "node_text",
]

# Node shape per visible kind (geometry lives in shapes.py; the Graphviz names in static.py).
SHAPES: dict[VisibleKind, str] = {
    "op": "rounded",
    "module": "rect",
    "folded": "double",
    "input": "pill",
    "output": "pill",
    "parameter": "hexagon",
    "constant": "octagon",
}

# Marks drawn in labels: a collapsed module can open (⊕), an expanded cluster can close (⊖).
OPEN_MARK = "⊕"
CLOSE_MARK = "⊖"


@dataclass(frozen=True)
class KindStyle:
    fill: str
    line: str
    text: str


def node_text(vn: VisibleNode) -> str:
    """A box's main line as drawn, plain text: ⊕ on what a click opens, the count of a folded run."""
    label = vn.label
    if vn.kind == "folded" and vn.count > 1 and f"×{vn.count}" not in label:
        label += f" ×{vn.count}"
    if vn.kind in ("module", "folded"):
        label = f"{OPEN_MARK} {label}"
    return label


@dataclass(frozen=True)
class Theme:
    name: ThemeName
    template: str
    paper: str  # the figure's background and the page's around it
    font: str  # default text colour (headers, edge labels; the page's text)
    muted: str  # edge labels, secondary text
    edge: str
    cluster_fill: str  # translucent: nested clusters darken as they stack
    cluster_line: str
    failed_line: str
    highlight: str
    kinds: dict[str, KindStyle]
    failed: KindStyle

    def page_style(self) -> dict[str, str]:
        """CSS colours of the page around the figure: the same background and text as the figure."""
        return {"background": self.paper, "color": self.font}


_LIGHT = Theme(
    name="light",
    template="plotly_white",
    paper="#ffffff",
    font="#2a3f5f",
    muted="#5b6b80",
    edge="#6b7b8f",
    cluster_fill="rgba(90,110,150,0.07)",
    cluster_line="#9aa7b8",
    failed_line="#d62728",
    highlight="#ff9f1c",
    kinds={
        "op": KindStyle("#dbe9f6", "#4a78a8", "#1b2a3a"),
        "module": KindStyle("#fde9c9", "#c08a2b", "#3a2a10"),
        "folded": KindStyle("#f8dcbc", "#b36b00", "#3a2a10"),
        "input": KindStyle("#d4efd8", "#3c8d4f", "#143a1e"),
        "output": KindStyle("#e8dcf5", "#7651a8", "#2c1a45"),
        "parameter": KindStyle("#ececec", "#8a8a8a", "#333333"),
        "constant": KindStyle("#f4f0d9", "#9a8f4a", "#3a3618"),
    },
    failed=KindStyle("#fbd0d0", "#d62728", "#5a0b0b"),
)

_DARK = Theme(
    name="dark",
    template="plotly_dark",
    paper="rgb(17,17,17)",
    font="#f2f5fa",
    muted="#a9b4c4",
    edge="#8d9bb0",
    cluster_fill="rgba(160,180,220,0.08)",
    cluster_line="#5d6b80",
    failed_line="#ff5c5c",
    highlight="#ffbf47",
    kinds={
        "op": KindStyle("#1f3a57", "#6fa3d8", "#e6f0fb"),
        "module": KindStyle("#4a3613", "#e0a84a", "#fbeed7"),
        "folded": KindStyle("#563a12", "#f0a640", "#fbeed7"),
        "input": KindStyle("#1c4226", "#63c07a", "#e2f6e6"),
        "output": KindStyle("#37265a", "#a783de", "#efe6fb"),
        "parameter": KindStyle("#333333", "#9a9a9a", "#e8e8e8"),
        "constant": KindStyle("#3d3a20", "#c4b65e", "#f3efd4"),
    },
    failed=KindStyle("#5a1616", "#ff5c5c", "#ffe3e3"),
)

_THEMES: dict[str, Theme] = {"light": _LIGHT, "dark": _DARK}
assert tuple(_THEMES) == THEMES


def get_theme(theme: str) -> Theme:
    """The named theme; a clear error for anything else."""
    try:
        return _THEMES[theme]
    except (KeyError, TypeError):
        raise ValueError(f"unknown theme {theme!r}; choose one of: {', '.join(THEMES)}") from None


def kind_style(theme: Theme, kind: str, failed: bool = False) -> KindStyle:
    """Style of one visible node; failed nodes are red whatever their kind."""
    if failed:
        return theme.failed
    return theme.kinds.get(kind, theme.kinds["op"])
