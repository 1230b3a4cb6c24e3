"""The text sizes every stage agrees on, and the one estimate of how wide a text is set.

No font is measured anywhere: the layout sizes each box and cluster header from its text with ``text_width``,
and the interactive picture, the overview labels and the static export draw that text at the same sizes and
shorten it to the same estimate, so no label leaves the room the layout made for it. Kept in one module so
that the room and the drawn text cannot drift apart; it lives in ``layout/`` because the layout is the first
stage that needs it (``render/`` imports downwards from here).
"""

from __future__ import annotations

FONT_NAME = "Helvetica"  # Graphviz's name for the font (the layout's DOT, the static export)
FONT_FAMILY = "Helvetica, Arial, 'Liberation Sans', 'DejaVu Sans', sans-serif"  # the SVG picture's CSS stack
LABEL_PT = 11.0  # points: a box's main label
SUB_PT = 9.0  # points: a box's second line (its shape), a key's entries
HEADER_PT = 10.0  # points: an open cluster's header
EDGE_PT = 8.0  # points: an edge label (a tensor's shape)
CHAR_EM = 0.6  # average glyph width as a fraction of the font size


def text_width(text: str, size_pt: float) -> float:
    """Estimated width in points of ``text`` set at ``size_pt`` points."""
    return len(text) * size_pt * CHAR_EM
