"""The view state a browser holds, a JSON dict in a ``dcc.Store``, and the ViewSpec it stands for.

The store holds only ``{"trace", "expanded", "unfolded", "pinned", "fold", "params", "ranges", "relayout",
"sent"}`` and the ``DrawOptions`` fields (``rankdir``, ``theme``, ``highlight``, ...): everything else is
derived from it on the server and cached per trace (registry.py), so two tabs on one graph never interfere.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from torchvista_dash.model.options import DrawOptions
from torchvista_dash.view.types import ViewSpec


def spec_to_store(spec: ViewSpec) -> dict[str, Any]:
    return {
        "expanded": sorted(spec.expanded),
        "unfolded": sorted(spec.unfolded),
        "pinned": sorted(spec.pinned),
        "fold": spec.fold_repeats,
        "params": spec.show_params,
    }


def spec_from_store(data: dict[str, Any]) -> ViewSpec:
    return ViewSpec(
        expanded=frozenset(data.get("expanded", ())),
        fold_repeats=bool(data.get("fold", True)),
        unfolded=frozenset(data.get("unfolded", ())),
        show_params=bool(data.get("params", False)),
        pinned=frozenset(data.get("pinned", ())),
    )


def draw_to_store(draw: DrawOptions) -> dict[str, Any]:
    """The drawing options as store keys (one per ``DrawOptions`` field, same name)."""
    return {f.name: getattr(draw, f.name) for f in fields(draw)}


def draw_from_store(data: dict[str, Any], **changes: Any) -> DrawOptions:
    """The drawing options a store holds, with ``changes`` applied (missing keys: the defaults)."""
    base = DrawOptions(**{f.name: data[f.name] for f in fields(DrawOptions) if f.name in data})
    return replace(base, **changes) if changes else base
