"""Hand-built Graph + VisibleGraph + Layout for render tests and benchmarks (no torch, no dot).

``grid_case(n)`` places ``n`` visible boxes on a grid with straight edges, inside nested clusters,
with every visible kind represented, so the renderer can be tested and timed at any size.
TinyNet / Broken are small real models for tests through the real tracer.
"""

from __future__ import annotations

import base64
import math
import xml.etree.ElementTree as ET

import torch
from torch import nn

from torchvista_dash.layout.types import EdgePath, Layout
from torchvista_dash.model.graph import (
    ROOT_CALL_ID,
    Edge,
    ErrorInfo,
    Graph,
    ModuleCall,
    Node,
    ParamInfo,
    TensorMeta,
    call_id_for,
    node_id_for,
)
from torchvista_dash.view.types import Cluster, ViewSpec, VisibleEdge, VisibleGraph, VisibleNode

META = TensorMeta(shape=(1, 8, 64), dtype="float32", device="cpu", nbytes=2048)
BOX_W, BOX_H, GAP_X, GAP_Y = 90.0, 36.0, 40.0, 50.0


def grid_case(n: int, *, failed: bool = False, cols: int | None = None) -> tuple[Graph, VisibleGraph, Layout]:
    """``n`` visible boxes (n >= 6): input, output, a parameter, a constant, a collapsed module, a folded
    group and ops, chained by edges, inside the root cluster and one nested cluster ("mod:enc")."""
    assert n >= 6
    cols = cols or max(2, int(math.ceil(math.sqrt(n))))
    enc_id = call_id_for("enc", 0)
    calls = [
        ModuleCall(
            id=ROOT_CALL_ID,
            qualname="",
            cls="GridNet",
            parent=None,
            num_params=4160,
            params=(ParamInfo("w", (64, 64), "float32", True), ParamInfo("b", (64,), "float32", True)),
        ),
        ModuleCall(id=enc_id, qualname="enc", cls="Encoder", parent=ROOT_CALL_ID, depth=1, failed=failed),
        ModuleCall(
            id=call_id_for("enc.block", 0),
            qualname="enc.block",
            cls="Block",
            parent=enc_id,
            depth=2,
            num_params=100,
            extra_repr="in=64, out=64",
            failed=False,
        ),
    ]
    calls += [
        ModuleCall(
            id=call_id_for(f"enc.layers.{i}", 0),
            qualname=f"enc.layers.{i}",
            cls="Layer",
            parent=enc_id,
            depth=2,
            num_params=10,
        )
        for i in range(3)
    ]
    gnodes: list[Node] = []
    vnodes: list[VisibleNode] = []
    kinds = ["input", "parameter", "constant", "module", "folded"] + ["op"] * (n - 6) + ["output"]
    fail_at = n // 2 if failed else -1
    for i, kind in enumerate(kinds):
        parent_cluster = None if kind in ("input", "output") else (enc_id if i % 2 else ROOT_CALL_ID)
        if kind == "module":
            vid = call_id_for("enc.block", 0)
            vnodes.append(
                VisibleNode(
                    id=vid,
                    kind="module",
                    label="block: Block",
                    parent=enc_id,
                    sublabel="Block",
                    members=(vid,),
                    failed=False,
                )
            )
            continue
        if kind == "folded":
            members = tuple(call_id_for(f"enc.layers.{k}", 0) for k in range(3))
            vnodes.append(
                VisibleNode(
                    id=f"fold:{members[0]}",
                    kind="folded",
                    label="Layer",
                    parent=enc_id,
                    count=3,
                    members=members,
                )
            )
            continue
        nid = node_id_for(i)
        err = "boom: shapes (8, 64) and (32, 64) cannot be multiplied <bad>" if i == fail_at else None
        gnodes.append(
            Node(
                id=nid,
                kind=kind,
                name=f"{kind}_{i}" if kind != "op" else "linear",
                parent=parent_cluster,
                error=err,
                args=(("dim", "1"),),
                source=f"model.py:{10 + i} in forward: x = self.fc(x)",
                params=("w", "b") if kind == "op" and i % 5 == 0 else (),
                outputs=(META,),
            )
        )
        vnodes.append(
            VisibleNode(
                id=nid,
                kind=kind,
                label=gnodes[-1].name,
                parent=parent_cluster,
                sublabel="1×8×64" if kind == "op" else "",
                failed=i == fail_at,
            )
        )
    ids = [v.id for v in vnodes]
    gedges = []
    for a, b in zip(gnodes, gnodes[1:], strict=False):
        gedges.append(Edge(src=a.id, dst=b.id, tensor=f"{a.id}/0", meta=META))
    vedges = [
        VisibleEdge(src=a, dst=b, tensor=f"{a}/0", meta=META, label="1×8×64")
        for a, b in zip(ids, ids[1:], strict=False)
    ]
    error = ErrorInfo(type="RuntimeError", message="boom", node=node_id_for(fail_at)) if failed else None
    graph = Graph(
        nodes=tuple(gnodes), edges=tuple(gedges), module_calls=tuple(calls), model_name="GridNet", error=error
    )
    clusters = (
        Cluster(id=ROOT_CALL_ID, label="(root): GridNet", parent=None, failed=failed),
        Cluster(id=enc_id, label="enc: Encoder", parent=ROOT_CALL_ID, failed=failed),
    )
    vg = VisibleGraph(
        nodes=tuple(vnodes),
        edges=tuple(vedges),
        clusters=clusters,
        spec=ViewSpec(expanded=frozenset({ROOT_CALL_ID, enc_id})),
    )

    boxes = {}
    rows = int(math.ceil(n / cols))
    height = rows * (BOX_H + GAP_Y) + 60
    for i, vid in enumerate(ids):
        r, c = divmod(i, cols)
        x0 = 40 + c * (BOX_W + GAP_X)
        y1 = height - 50 - r * (BOX_H + GAP_Y)
        boxes[vid] = (x0, y1 - BOX_H, x0 + BOX_W, y1)
    width = 40 + cols * (BOX_W + GAP_X) + 20
    paths = []
    for a, b in zip(ids, ids[1:], strict=False):
        ax0, ay0, ax1, _ = boxes[a]
        bx0, _, bx1, by1 = boxes[b]
        p0, p1 = ((ax0 + ax1) / 2, ay0), ((bx0 + bx1) / 2, by1)
        paths.append(
            EdgePath(
                src=a,
                dst=b,
                points=(p0, ((p0[0] + p1[0]) / 2, (p0[1] + p1[1]) / 2), p1),
                label="1×8×64",
                label_pos=((p0[0] + p1[0]) / 2 + 20, (p0[1] + p1[1]) / 2),
            )
        )
    all_boxes = list(boxes.values())
    inner = [boxes[v.id] for v in vnodes if v.parent == enc_id]
    root_box = (10.0, 10.0, width - 5, height - 5)
    enc_box = (
        (
            min(b[0] for b in inner) - 8,
            min(b[1] for b in inner) - 8,
            max(b[2] for b in inner) + 8,
            max(b[3] for b in inner) + 24,
        )
        if inner
        else (20, 20, 60, 60)
    )
    assert all_boxes
    layout = Layout(
        nodes=boxes,
        clusters={ROOT_CALL_ID: root_box, enc_id: enc_box},
        parent={**{v.id: v.parent for v in vnodes}, ROOT_CALL_ID: None, enc_id: ROOT_CALL_ID},
        edges=tuple(paths),
        width=width,
        height=height,
    )
    return graph, vg, layout


# ---- small real models (traced in the pipeline, export and browser tests) ------------------------
class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) + x


class TinyNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.blocks = nn.Sequential(Block(), Block(), Block())
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.embed(x))).softmax(-1)


class Broken(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


SVG_NS = "{http://www.w3.org/2000/svg}"


def picture_pieces(fig: object) -> list[ET.Element]:
    """The figure's picture pieces (its layout images, SVG data URIs) parsed back into XML, in order."""
    out = []
    for img in fig.layout.images:  # type: ignore[attr-defined]
        head, b64 = img.source.split(",", 1)
        assert head == "data:image/svg+xml;base64"
        out.append(ET.fromstring(base64.b64decode(b64).decode("utf-8")))
    return out


def picture_of(fig: object) -> ET.Element:
    """The figure's picture as one SVG: its one image, or its tiles' elements together (an element near a
    tile's border is in both tiles, the same text: kept once; the style and the joined edge paths of the first
    tile only)."""
    first, *rest = picture_pieces(fig)
    seen = {ET.tostring(e) for e in first}
    for piece in rest:
        for e in piece:
            key = ET.tostring(e)
            if e.tag != f"{SVG_NS}style" and key not in seen:
                seen.add(key)
                first.append(e)
    return first


def picture_texts(svg: ET.Element, cls: str | None = None) -> list[str]:
    """Text drawn in the picture, optionally only of one CSS class ("t" labels, "s" shapes, "h" headers,
    ...)."""
    return [
        t.text or ""
        for t in svg.iter(f"{SVG_NS}text")
        if cls is None or cls in (t.get("class") or "").split()
    ]
