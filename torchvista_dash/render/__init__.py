"""Layout → plotly Figure (``make_figure``) and static files (``render.export.export``)."""

from __future__ import annotations

from .figure import SCROLL_CONFIG, UIREVISION, make_figure
from .style import THEMES

__all__ = ["SCROLL_CONFIG", "THEMES", "UIREVISION", "make_figure"]
