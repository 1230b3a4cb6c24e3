"""Layout → plotly Figure (``make_figure``) and static files (``render.export.export``).

What the app can rely on in a figure from ``make_figure``:

- Clickable points carry their visible id in ``customdata``: ``nodes:labels`` (every box: graph node id,
  ModuleCall id of a collapsed module, ``fold:...`` id of a folded group), ``clusters:headers`` and
  ``clusters:toggles`` (the expanded ModuleCall id). Traces without customdata have ``hoverinfo="skip"``,
  so they never produce clicks.
- Axis ranges are in Graphviz points (the Layout's coordinates, y up); ``yaxis.scaleanchor = "x"``.
- ``layout.uirevision`` is ``UIREVISION`` (override with ``uirevision=``): while it stays the same,
  plotly keeps the user's zoom across figure updates.
- ``layout.meta["torchvista_dash"]``: ``bounds`` of the drawing, ``label_px``, whether ``labels`` and
  ``details`` (sublabels, edge labels) are drawn, and ``notes``.
- Path traces hold float32 numpy arrays (NaN between parts); point traces hold plain lists.
"""

from __future__ import annotations

from .figure import SCROLL_CONFIG, UIREVISION, make_figure
from .style import THEMES

__all__ = ["SCROLL_CONFIG", "THEMES", "UIREVISION", "make_figure"]
