"""The data model: a traced forward pass as plain, typed, frozen data.

Modelled on ``torch.fx.Graph``: small dataclasses whose ids are deterministic strings, so the
same model and input give byte-identical JSON. Nothing here imports torch, so a saved trace
can be loaded, viewed and drawn on a machine without it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

SCHEMA = "torchvista_dash.graph/1"

NodeKind = Literal["input", "output", "op", "constant", "parameter"]
NODE_KINDS: tuple[str, ...] = ("input", "output", "op", "constant", "parameter")

ROOT_CALL_ID = "mod:(root)"


def call_id_for(qualname: str, call_index: int) -> str:
    """The id of the ``call_index``-th call of the module at ``qualname`` ("" is the root)."""
    base = f"mod:{qualname}" if qualname else ROOT_CALL_ID
    return base if call_index == 0 else f"{base}#{call_index}"


def node_id_for(index: int) -> str:
    """Nodes are numbered in the order the forward pass produced them."""
    return f"n:{index}"


class TraceFormatError(ValueError):
    """A file or JSON document that is not a torchvista_dash trace (or not one we can read)."""


@dataclass(frozen=True)
class TensorMeta:
    """What an edge carries: the tensor's metadata, never its values."""

    shape: tuple[int, ...]
    dtype: str
    device: str
    nbytes: int


@dataclass(frozen=True)
class ParamInfo:
    """One parameter or buffer owned directly by a module."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    trainable: bool
    is_buffer: bool = False


@dataclass(frozen=True)
class ModuleCall:
    """One call of one ``nn.Module``; a module called twice gives two calls."""

    id: str
    qualname: str
    cls: str
    parent: str | None
    call_index: int = 0
    num_params: int = 0
    params: tuple[ParamInfo, ...] = ()
    extra_repr: str = ""
    attrs: tuple[tuple[str, str], ...] = ()
    failed: bool = False
    depth: int = 0                  # 0 for the root call
    builtin: bool = False           # a torch.nn class (nn.Linear, ...): views start with it collapsed

    @property
    def name(self) -> str:
        """The last component of the qualname (the attribute the parent knows it by)."""
        return self.qualname.rsplit(".", 1)[-1] if self.qualname else "(root)"


@dataclass(frozen=True)
class Node:
    """A value-producing step: an input, an op, a constant, a parameter or an output."""

    id: str
    kind: str
    name: str
    parent: str | None = None
    error: str | None = None
    args: tuple[tuple[str, str], ...] = ()
    source: str | None = None
    params: tuple[str, ...] = ()
    outputs: tuple[TensorMeta, ...] = ()


@dataclass(frozen=True)
class Edge:
    """A tensor flowing from ``src`` to ``dst``; ``tensor`` names the value (merge key)."""

    src: str
    dst: str
    tensor: str
    meta: TensorMeta
    dst_arg: int = 0


@dataclass(frozen=True)
class ErrorInfo:
    """The exception a failed forward pass raised, as text."""

    type: str
    message: str
    traceback: str = ""
    node: str | None = None


@dataclass(frozen=True)
class Graph:
    """A whole traced forward pass."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    module_calls: tuple[ModuleCall, ...]
    model_name: str = ""
    error: ErrorInfo | None = None
    versions: tuple[tuple[str, str], ...] = ()

    # ---- lookups (computed once; the graph is immutable) -------------------------------
    @cached_property
    def node_by_id(self) -> dict[str, Node]:
        return {n.id: n for n in self.nodes}

    @cached_property
    def call_by_id(self) -> dict[str, ModuleCall]:
        return {c.id: c for c in self.module_calls}

    @cached_property
    def calls_by_qualname(self) -> dict[str, list[ModuleCall]]:
        out: dict[str, list[ModuleCall]] = {}
        for c in self.module_calls:
            out.setdefault(c.qualname, []).append(c)
        return out

    @cached_property
    def children_calls(self) -> dict[str | None, list[str]]:
        """Call id (None for top level) → ids of the calls directly inside it, in call order."""
        out: dict[str | None, list[str]] = {}
        for c in self.module_calls:
            out.setdefault(c.parent, []).append(c.id)
        return out

    def ancestors(self, call_or_node_parent: str | None) -> list[str]:
        """Call ids from ``call_or_node_parent`` up to the top, innermost first."""
        chain: list[str] = []
        cur = call_or_node_parent
        while cur is not None:
            chain.append(cur)
            cur = self.call_by_id[cur].parent
        return chain

    @property
    def root(self) -> ModuleCall | None:
        tops = self.children_calls.get(None, [])
        return self.call_by_id[tops[0]] if tops else None

    @property
    def op_count(self) -> int:
        return sum(1 for n in self.nodes if n.kind == "op")

    @property
    def total_params(self) -> int:
        """Parameters of the whole model, each module's own counted once."""
        seen: set[str] = set()
        total = 0
        for c in self.module_calls:
            if c.qualname in seen:
                continue
            seen.add(c.qualname)
            total += sum(_numel(p.shape) for p in c.params if not p.is_buffer)
        return total

    @cached_property
    def content_id(self) -> str:
        """A hash of the JSON, computed once: the same graph always gets the same id (keys registries, caches)."""
        return hashlib.sha1(self.to_json(indent=None).encode()).hexdigest()[:16]

    # ---- JSON -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "model_name": self.model_name,
            "versions": dict(self.versions),
            "error": None if self.error is None else _error_to_dict(self.error),
            "module_calls": [_call_to_dict(c) for c in self.module_calls],
            "nodes": [_node_to_dict(n) for n in self.nodes],
            "edges": [_edge_to_dict(e) for e in self.edges],
        }

    def to_json(self, indent: int | None = 1) -> str:
        """Deterministic JSON: same graph ⇒ same bytes."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes) -> Graph:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TraceFormatError(f"not a torchvista_dash trace: invalid JSON ({exc})") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Graph:
        if not isinstance(data, Mapping) or "schema" not in data:
            raise TraceFormatError(
                "not a torchvista_dash trace: the JSON has no 'schema' field "
                "(save traces with Trace.save() or `python -m torchvista_dash export ... -o x.json`)"
            )
        if data["schema"] != SCHEMA:
            raise TraceFormatError(
                f"unsupported trace schema {data['schema']!r}; this version reads {SCHEMA!r}"
            )
        try:
            graph = cls(
                nodes=tuple(_node_from_dict(d) for d in data["nodes"]),
                edges=tuple(_edge_from_dict(d) for d in data["edges"]),
                module_calls=tuple(_call_from_dict(d) for d in data["module_calls"]),
                model_name=str(data.get("model_name", "")),
                error=None if data.get("error") is None else _error_from_dict(data["error"]),
                versions=tuple(sorted((str(k), str(v)) for k, v in data.get("versions", {}).items())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise TraceFormatError(f"corrupt torchvista_dash trace: {type(exc).__name__}: {exc}") from None
        graph.validate()
        return graph

    def validate(self) -> None:
        """Check referential integrity; raise TraceFormatError naming the first problem."""
        calls = self.call_by_id
        if len(calls) != len(self.module_calls):
            raise TraceFormatError("corrupt trace: duplicate module call ids")
        if len(self.node_by_id) != len(self.nodes):
            raise TraceFormatError("corrupt trace: duplicate node ids")
        for c in self.module_calls:
            if c.parent is not None and c.parent not in calls:
                raise TraceFormatError(f"corrupt trace: call {c.id} has unknown parent {c.parent}")
        for n in self.nodes:
            if n.kind not in NODE_KINDS:
                raise TraceFormatError(f"corrupt trace: node {n.id} has unknown kind {n.kind!r}")
            if n.parent is not None and n.parent not in calls:
                raise TraceFormatError(f"corrupt trace: node {n.id} has unknown parent {n.parent}")
        nodes = self.node_by_id
        for e in self.edges:
            if e.src not in nodes or e.dst not in nodes:
                raise TraceFormatError(f"corrupt trace: edge {e.src}->{e.dst} names an unknown node")

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_json(), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Graph:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no trace file at {path}")
        return cls.from_json(path.read_bytes())


def _numel(shape: Iterable[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


# ---- (de)serialization helpers: explicit, so loading never trusts the file's structure ----
def _meta_to_dict(m: TensorMeta) -> dict[str, Any]:
    return {"shape": list(m.shape), "dtype": m.dtype, "device": m.device, "nbytes": m.nbytes}


def _meta_from_dict(d: Mapping[str, Any]) -> TensorMeta:
    return TensorMeta(
        shape=tuple(int(s) for s in d["shape"]), dtype=str(d["dtype"]), device=str(d["device"]),
        nbytes=int(d["nbytes"]),
    )


def _call_to_dict(c: ModuleCall) -> dict[str, Any]:
    return {
        "id": c.id, "qualname": c.qualname, "cls": c.cls, "parent": c.parent, "call_index": c.call_index,
        "num_params": c.num_params, "extra_repr": c.extra_repr, "attrs": [list(a) for a in c.attrs],
        "failed": c.failed, "depth": c.depth, "builtin": c.builtin,
        "params": [
            {"name": p.name, "shape": list(p.shape), "dtype": p.dtype, "trainable": p.trainable,
             "is_buffer": p.is_buffer}
            for p in c.params
        ],
    }


def _call_from_dict(d: Mapping[str, Any]) -> ModuleCall:
    return ModuleCall(
        id=str(d["id"]), qualname=str(d["qualname"]), cls=str(d["cls"]),
        parent=None if d["parent"] is None else str(d["parent"]), call_index=int(d["call_index"]),
        num_params=int(d["num_params"]), extra_repr=str(d["extra_repr"]),
        attrs=tuple((str(k), str(v)) for k, v in d["attrs"]), failed=bool(d["failed"]), depth=int(d["depth"]),
        builtin=bool(d["builtin"]),
        params=tuple(
            ParamInfo(name=str(p["name"]), shape=tuple(int(s) for s in p["shape"]), dtype=str(p["dtype"]),
                      trainable=bool(p["trainable"]), is_buffer=bool(p["is_buffer"]))
            for p in d["params"]
        ),
    )


def _node_to_dict(n: Node) -> dict[str, Any]:
    return {
        "id": n.id, "kind": n.kind, "name": n.name, "parent": n.parent, "error": n.error,
        "args": [list(a) for a in n.args], "source": n.source, "params": list(n.params),
        "outputs": [_meta_to_dict(m) for m in n.outputs],
    }


def _node_from_dict(d: Mapping[str, Any]) -> Node:
    return Node(
        id=str(d["id"]), kind=str(d["kind"]), name=str(d["name"]),
        parent=None if d["parent"] is None else str(d["parent"]),
        error=None if d["error"] is None else str(d["error"]),
        args=tuple((str(k), str(v)) for k, v in d["args"]),
        source=None if d["source"] is None else str(d["source"]),
        params=tuple(str(p) for p in d["params"]),
        outputs=tuple(_meta_from_dict(m) for m in d["outputs"]),
    )


def _edge_to_dict(e: Edge) -> dict[str, Any]:
    return {"src": e.src, "dst": e.dst, "tensor": e.tensor, "meta": _meta_to_dict(e.meta), "dst_arg": e.dst_arg}


def _edge_from_dict(d: Mapping[str, Any]) -> Edge:
    return Edge(src=str(d["src"]), dst=str(d["dst"]), tensor=str(d["tensor"]), meta=_meta_from_dict(d["meta"]),
                dst_arg=int(d["dst_arg"]))


def _error_to_dict(e: ErrorInfo) -> dict[str, Any]:
    return {"type": e.type, "message": e.message, "traceback": e.traceback, "node": e.node}


def _error_from_dict(d: Mapping[str, Any]) -> ErrorInfo:
    return ErrorInfo(type=str(d["type"]), message=str(d["message"]), traceback=str(d.get("traceback", "")),
                     node=None if d.get("node") is None else str(d["node"]))
