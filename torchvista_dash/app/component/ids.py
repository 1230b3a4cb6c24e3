"""Pattern-matching ids of a ModelGraph's parts: ``{"component", "subcomponent", "aio_id"}``.

Every callback uses MATCH on ``aio_id``, so any number of ModelGraphs share one set of callbacks and
never collide.
"""

from __future__ import annotations

from typing import Any

COMPONENT = "ModelGraph"

SUBCOMPONENTS = (
    "root",
    "graph",
    "store",
    "details",
    "header",
    "notes",
    "expand_all",
    "collapse_all",
    "depth",
    "options",
    "direction",
    "theme",
    "fit",
    "search",
    "export_html",
    "export_svg",
    "export_png",
    "export_json",
    "download",
    "export_status",
    "color_by",
    "selected",
    "progress",
    "progress_poll",
    "first_view",
    "hits",
    "reach",
    "path_to",
    "clear",
    "keys",
    "find",
    "find_box",
    "pointer",
    "first_nonfinite",
    "style",
)


def make(sub: str, aio_id: Any) -> dict[str, Any]:
    if sub not in SUBCOMPONENTS:
        raise ValueError(f"unknown ModelGraph part {sub!r}")
    return {"component": COMPONENT, "subcomponent": sub, "aio_id": aio_id}


class ids:  # noqa: N801 - the Dash All-in-One convention: ModelGraph.ids.graph(aio_id)
    """Id factories, one per part (``ModelGraph.ids.graph("enc")``)."""

    root = staticmethod(lambda aio_id: make("root", aio_id))
    graph = staticmethod(lambda aio_id: make("graph", aio_id))
    store = staticmethod(lambda aio_id: make("store", aio_id))
    details = staticmethod(lambda aio_id: make("details", aio_id))
    header = staticmethod(lambda aio_id: make("header", aio_id))
    notes = staticmethod(lambda aio_id: make("notes", aio_id))
    expand_all = staticmethod(lambda aio_id: make("expand_all", aio_id))
    collapse_all = staticmethod(lambda aio_id: make("collapse_all", aio_id))
    depth = staticmethod(lambda aio_id: make("depth", aio_id))
    options = staticmethod(lambda aio_id: make("options", aio_id))
    direction = staticmethod(lambda aio_id: make("direction", aio_id))
    theme = staticmethod(lambda aio_id: make("theme", aio_id))
    fit = staticmethod(lambda aio_id: make("fit", aio_id))
    search = staticmethod(lambda aio_id: make("search", aio_id))
    export_html = staticmethod(lambda aio_id: make("export_html", aio_id))
    export_svg = staticmethod(lambda aio_id: make("export_svg", aio_id))
    export_png = staticmethod(lambda aio_id: make("export_png", aio_id))
    export_json = staticmethod(lambda aio_id: make("export_json", aio_id))
    download = staticmethod(lambda aio_id: make("download", aio_id))
    export_status = staticmethod(lambda aio_id: make("export_status", aio_id))
    color_by = staticmethod(lambda aio_id: make("color_by", aio_id))
    # what the user last clicked or searched: {"id", "kind", "qualname", "cls", ...} (details.selection), or
    # None
    selected = staticmethod(lambda aio_id: make("selected", aio_id))
    # how far a slow view change has got (progress.py): the text, and the interval that polls while it runs
    progress = staticmethod(lambda aio_id: make("progress", aio_id))
    progress_poll = staticmethod(lambda aio_id: make("progress_poll", aio_id))
    # a one-shot interval: the page asks for a first view its constructor did not finish in time
    # (firstview.py)
    first_view = staticmethod(lambda aio_id: make("first_view", aio_id))
    # what the figure's hit bars cover (app/actions/hitlayer.py)
    hits = staticmethod(lambda aio_id: make("hits", aio_id))
    # what a selection lights (view/reach.py): how far, a path to another box, and clearing it
    reach = staticmethod(lambda aio_id: make("reach", aio_id))
    path_to = staticmethod(lambda aio_id: make("path_to", aio_id))
    clear = staticmethod(lambda aio_id: make("clear", aio_id))
    # key presses on the page, and presses on the plot (dash_extensions.EventListener): shortcuts, and
    # Shift held while clicking a box (a path)
    keys = staticmethod(lambda aio_id: make("keys", aio_id))
    pointer = staticmethod(lambda aio_id: make("pointer", aio_id))
    # the find box ("/" opens it, focused): its text field, and the box that holds it
    find = staticmethod(lambda aio_id: make("find", aio_id))
    find_box = staticmethod(lambda aio_id: make("find_box", aio_id))
    # the "first NaN/Inf" button of a value trace: opens, selects and centres where NaN/Inf first appears
    first_nonfinite = staticmethod(lambda aio_id: make("first_nonfinite", aio_id))
    # style rules typed in the page ("re:.*attn.*=#e45756; cls:Linear=#4c78a8"), applied on Enter
    style = staticmethod(lambda aio_id: make("style", aio_id))
