"""Layout → plotly Figure (``make_figure``) and static files (``render.static``, written by
``pipeline.export``).

What the app can rely on in a figure from ``make_figure``:

- The picture is ``layout.images``: SVG (``render/svg/picture.py``) in data coordinates, whose text follows
  the zoom; one image for a small view, tiles of about ``figure.TILE_PT`` points for a big one
  (``render/svg/tiles.py``), all named ``"picture"``. Click and hover targets are invisible bars carrying
  their visible id in ``customdata``: ``nodes:labels`` (every box, exactly its size: graph node id, ModuleCall
  id of a collapsed module, ``fold:...`` id of a folded group) and ``clusters:headers`` (an expanded cluster's
  whole header row, its ModuleCall id). Traces without customdata have ``hoverinfo="skip"``, so they never
  produce clicks.
- Axis ranges are in Graphviz points (the Layout's coordinates, y up); ``yaxis.scaleanchor = "x"``.
- ``layout.uirevision`` is ``UIREVISION`` (override with ``uirevision=``): while it stays the same,
  plotly keeps the user's zoom across figure updates.
- ``layout.meta["torchvista_dash"]``: ``bounds`` of the drawing, the ``picture``'s extent, the level-of-detail
  scales (``lod``, px per point), whether ``labels`` and ``details`` (shape lines, edge labels) are drawn,
  ``notes``, and how many ``boxes`` and ``clusters`` the view has (the app's figures carry only the hit bars
  near the viewport: ``render/hits.py``).
"""

from __future__ import annotations

from torchvista_dash.render.figure import SCROLL_CONFIG, UIREVISION, figure_dict, make_figure
from torchvista_dash.render.style import THEMES

__all__ = ["SCROLL_CONFIG", "THEMES", "UIREVISION", "figure_dict", "make_figure"]
