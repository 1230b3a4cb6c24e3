"""Facts that every stage shares are defined once: the text sizes and glyph estimate in layout/textmetrics.py,
the viewport's ``Ranges`` and pixels-per-point in render/viewport.py. Checked on the source (no second
definition creeps back) and by behaviour (the layout's room and the drawn text agree)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

from torchvista_dash.layout import textmetrics
from torchvista_dash.layout.single.dot import PAD_X, node_size
from torchvista_dash.render import viewport
from torchvista_dash.render.labels import fit_text
from torchvista_dash.view.types import VisibleNode

PACKAGE = Path(__file__).resolve().parent.parent / "torchvista_dash"
TEXT_FACTS = {"FONT", "FONT_NAME", "FONT_FAMILY", "CHAR_EM", "CHAR_WIDTH"}


def _module_assignments(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _defined_outside(home: Path, wanted: Callable[[str], bool]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == home:
            continue
        hits = sorted(n for n in _module_assignments(path) if wanted(n))
        if hits:
            found[str(path.relative_to(PACKAGE))] = hits
    return found


def test_text_sizes_are_defined_only_in_textmetrics() -> None:
    def is_text_fact(name: str) -> bool:
        return (
            name in TEXT_FACTS
            or re.search(r"(LABEL|SUB|HEADER|EDGE|FONT|SMALL|TEXT)_PT$|FONT_SIZE$", name) is not None
        )

    assert _defined_outside(PACKAGE / "layout" / "textmetrics.py", is_text_fact) == {}


def test_ranges_are_defined_only_in_the_viewport() -> None:
    assert (
        _defined_outside(PACKAGE / "render" / "viewport.py", lambda n: n in {"Ranges", "NOMINAL_PLOT_PX"})
        == {}
    )


def test_the_layout_makes_room_for_exactly_the_text_the_picture_draws() -> None:
    label = "self_attn: LlamaAttention"
    node = VisibleNode(id="m", kind="module", label=label, parent=None)
    width, _ = node_size(node)
    room = width - 2 * PAD_X
    assert room == textmetrics.text_width(label, textmetrics.LABEL_PT)
    assert fit_text(label, room, textmetrics.LABEL_PT) == label  # the room the layout made holds it whole
    assert (
        fit_text(label, room - textmetrics.text_width("x", textmetrics.LABEL_PT), textmetrics.LABEL_PT)
        != label
    )


def test_one_scale_for_the_figure_the_clicks_and_the_hit_layer() -> None:
    ranges = [[0.0, 2200.0], [0.0, 700.0]]
    assert viewport.scale(ranges) == 0.5  # the nominal 1100 px wide plot shows 2,200 points
    assert viewport.fit_scale((0.0, 0.0, 2200.0 - 2 * viewport.PAD, 700.0 - 2 * viewport.PAD)) == 0.5
    assert viewport.scale(ranges, (2560.0, 1600.0)) == 2560.0 / 2200.0
