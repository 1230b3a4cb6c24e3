"""The data model: a traced forward pass as plain, typed, frozen data.

Modelled on ``torch.fx.Graph``: small dataclasses whose ids are deterministic strings, so the
same model and input give byte-identical JSON. Nothing here imports torch, so a saved trace
can be loaded, viewed and drawn on a machine without it.
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, get_args

import orjson

from torchvista_dash.model.checks import (
    REQUIRED,
    FieldError,
    TraceFormatError,
    check_size,
    check_structure,
    forget_interned,
    interned,
    list_of,
    read_bool,
    read_int,
    read_name,
    read_opt_str,
    read_pairs,
    read_shape,
    read_str,
    read_str_map,
    read_strs,
    record,
    trace_size_limit,
)
from torchvista_dash.model.checks import TraceSizeError as TraceSizeError
from torchvista_dash.model.values import ValueStats, read_grads, read_node_values, stats_to_dict

SCHEMA = "torchvista_dash.model.graph/1"
# a trace with value summaries (Node.values): older readers refuse it by its schema rather than by a field
# they do not know; a trace without them stays /1, byte for byte
SCHEMA_VALUES = "torchvista_dash.model.graph/2"
SCHEMAS = (SCHEMA, SCHEMA_VALUES)

NodeKind = Literal["input", "output", "op", "constant", "parameter"]
NODE_KINDS: tuple[NodeKind, ...] = get_args(NodeKind)

ROOT_CALL_ID = "mod:(root)"


def call_id_for(qualname: str, call_index: int) -> str:
    """The id of the ``call_index``-th call of the module at ``qualname`` ("" is the root)."""
    base = f"mod:{qualname}" if qualname else ROOT_CALL_ID
    return base if call_index == 0 else f"{base}#{call_index}"


def node_id_for(index: int) -> str:
    """Nodes are numbered in the order the forward pass produced them."""
    return f"n:{index}"


@dataclass(frozen=True)
class TensorMeta:
    """What an edge carries: the tensor's metadata, never its values."""

    shape: tuple[int, ...]
    dtype: str
    device: str
    nbytes: int
    # Each size as the source names it, when one is symbolic (a torch.export program's ``s0``, ``2*s0``);
    # ``shape`` then holds the example's sizes, which costs and folding count with. None: all concrete.
    dims: tuple[str, ...] | None = None


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
    depth: int = 0  # 0 for the root call
    builtin: bool = False  # a torch.nn class (nn.Linear, ...): views start with it collapsed

    @property
    def name(self) -> str:
        """The last component of the qualname (the attribute the parent knows it by)."""
        return self.qualname.rsplit(".", 1)[-1] if self.qualname else "(root)"


@dataclass(frozen=True)
class Node:
    """A value-producing step: an input, an op, a constant, a parameter or an output."""

    id: str
    kind: NodeKind
    name: str
    parent: str | None = None
    error: str | None = None
    args: tuple[tuple[str, str], ...] = ()
    source: str | None = None
    params: tuple[str, ...] = ()
    outputs: tuple[TensorMeta, ...] = ()
    flops: int = 0  # counted with torch.utils.flop_counter's formulas (see Graph.measured)
    time_ms: float | None = None  # median wall time of the op in a separate timed run (timing=True)
    values: tuple[ValueStats | None, ...] = ()  # per output, its values' summary (values=True), else ()


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
    measured: tuple[str, ...] = ()  # what the nodes carry: "flops", "time", "values" (older traces: none)
    # What the source could not give and every view says (a graph with no shapes, no module structure)
    notes: tuple[str, ...] = ()
    # grads=: each trainable parameter's gradient norm (None: the loss does not reach it), by every name
    grads: tuple[tuple[str, float | None], ...] = ()

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
        """Parameters of the whole model, each counted once (a tied weight too): the root call's count, else
        each module's own summed."""
        root = self.root
        if root is not None and root.qualname == "":
            return root.num_params
        seen: set[str] = set()
        total = 0
        for c in self.module_calls:
            if c.qualname in seen:
                continue
            seen.add(c.qualname)
            total += sum(numel(p.shape) for p in c.params if not p.is_buffer)
        return total

    @cached_property
    def content_id(self) -> str:
        """A hash of the bytes ``save`` writes (for a loaded trace: of the bytes it was read from, hashed
        while loading, so the graph is not serialised again): keys registries and caches.

        A trace saved and loaded again keeps its id; the same file always gives the same id."""
        return _hash_id(self.to_bytes())

    # ---- JSON -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VALUES if {"values", "grads"} & set(self.measured) else SCHEMA,
            "model_name": self.model_name,
            "versions": dict(self.versions),
            "error": None if self.error is None else _error_to_dict(self.error),
            "module_calls": [_call_to_dict(c) for c in self.module_calls],
            "nodes": [_node_to_dict(n) for n in self.nodes],
            "edges": [_edge_to_dict(e) for e in self.edges],
            **({"measured": list(self.measured)} if self.measured else {}),
            **({"notes": list(self.notes)} if self.notes else {}),
            **({"grads": [list(g) for g in self.grads]} if self.grads else {}),
        }

    def to_bytes(self) -> bytes:
        """Deterministic UTF-8 JSON, sorted keys, indented: same graph ⇒ same bytes.

        A string that is not valid Unicode (a lone surrogate, only possible in a graph built in memory) is
        written as ``?``, so every saved file loads again."""
        with gc_paused():
            d = self.to_dict()
        try:
            return orjson.dumps(d, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
        except orjson.JSONEncodeError:
            text = json.dumps(d, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            return text.encode("utf-8", "replace")

    def to_json(self) -> str:
        """``to_bytes`` as text."""
        return self.to_bytes().decode("utf-8")

    @classmethod
    def from_json(cls, text: str | bytes, *, max_bytes: int | None = None) -> Graph:
        """Parse and validate a trace; anything that is not one is a TraceFormatError (never unpickles).

        ``max_bytes``: the size limit (default: ``trace_size_limit()``)."""
        check_size(len(text), trace_size_limit(max_bytes), "the trace")
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise TraceFormatError(f"not a torchvista_dash trace: invalid JSON ({exc})") from None
        graph = cls.from_dict(data)
        raw = text if isinstance(text, bytes) else text.encode("utf-8")
        graph.__dict__["content_id"] = _hash_id(raw)  # the cached_property's slot: no second serialisation
        return graph

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Graph:
        if not isinstance(data, Mapping) or "schema" not in data:
            raise TraceFormatError(
                "not a torchvista_dash trace: the JSON has no 'schema' field "
                "(save traces with Trace.save() or `python -m torchvista_dash export ... -o x.json`)"
            )
        if data["schema"] not in SCHEMAS:
            raise TraceFormatError(
                f"unsupported trace schema {str(data['schema'])[:80]!r}; this version reads "
                f"{' and '.join(map(repr, SCHEMAS))}"
            )
        try:
            with gc_paused():
                graph: Graph = _read_graph(data)
        except FieldError as exc:
            raise TraceFormatError(f"corrupt torchvista_dash trace: {exc}") from None
        finally:
            forget_interned()
        graph.validate()
        return graph

    def validate(self) -> None:
        """Check references, acyclic parents and depths; raise TraceFormatError naming the first problem."""
        check_structure(self, NODE_KINDS)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        data = self.to_bytes()
        path.write_bytes(data)
        self.__dict__.setdefault("content_id", _hash_id(data))
        return path

    @classmethod
    def load(cls, path: str | Path, *, max_bytes: int | None = None) -> Graph:
        """Read a saved trace; a file over the size limit (``max_bytes``, ``$TVD_MAX_TRACE_BYTES``, default
        MAX_TRACE_BYTES) is refused before it is read."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no trace file at {path}")
        limit = trace_size_limit(max_bytes)
        size = path.stat().st_size
        check_size(size, limit, "the file")
        with path.open("rb") as f:
            data = f.read(size + 1)  # read(n) allocates n bytes: never the limit itself (it may be huge)
            if len(data) > size:  # the file grew since stat: read on, in bounded pieces, to the limit
                buf = bytearray(data)
                while len(buf) <= limit:
                    more = f.read(min(1 << 24, limit + 1 - len(buf)))
                    if not more:
                        break
                    buf += more
                data = bytes(buf)
        check_size(len(data), limit, "the file")
        return cls.from_json(data, max_bytes=limit)


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic-GC passes while building (or writing out) a whole graph: millions of new objects, none in a
    cycle, so every pass over them is pure cost (on big graphs, several times what ``to_dict`` itself
    takes)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _hash_id(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:16]


def numel(shape: Iterable[int]) -> int:
    """Elements of a tensor of ``shape`` (1 for a 0-d tensor)."""
    n = 1
    for s in shape:
        n *= int(s)
    return n


MEASURABLE = ("flops", "time", "values", "grads")


def _read_time_ms(value: Any) -> float | None:
    if value is None or (type(value) in (int, float) and 0 <= value < 1e9):
        return None if value is None else float(value)
    raise FieldError(f"must be a number of milliseconds from 0 to 1e9 or null, got {str(value)[:40]}")


def _read_measured(value: Any) -> tuple[str, ...]:
    if type(value) is not list or any(v not in MEASURABLE for v in value):
        raise FieldError(f"must be a list of some of {', '.join(MEASURABLE)}, got {str(value)[:60]}")
    return tuple(m for m in MEASURABLE if m in value)


def shape_text(shape: Iterable[int]) -> str:
    """How every part of the package writes a shape: ``(1, 8, 64)`` → ``1×8×64``; a 0-d tensor is
    ``scalar``."""
    dims = [str(int(s)) for s in shape]
    return "×".join(dims) if dims else "scalar"


def shown_args(args: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """An op's arguments as the details panel and hover list them: without torch's private parameters
    (``F.softmax``'s ``_stacklevel``), which torch fills in itself and a reader of the model never set.
    Such an argument holding a tensor stays: it is an input the graph draws. The trace keeps them all."""
    return [(k, v) for k, v in args if not k.startswith("_") or "Tensor[" in v]


UNKNOWN_DTYPE = "unknown"  # a tensor whose shape and dtype the source did not record (an FX graph without
# shape propagation): drawn without a shape


def unknown_meta() -> TensorMeta:
    """The metadata of a tensor whose shape and dtype the source does not know."""
    return TensorMeta(shape=(), dtype=UNKNOWN_DTYPE, device="", nbytes=0)


def tensor_shape_text(m: TensorMeta) -> str:
    """The shape of the tensor ``m`` describes as drawn: ``s0×16×768`` for a symbolic batch, ``""`` when the
    source did not record it."""
    if m.dims is not None:
        return "×".join(m.dims) if m.dims else "scalar"
    if m.dtype == UNKNOWN_DTYPE:
        return ""
    return shape_text(m.shape)


def meta_text(m: TensorMeta) -> str:
    """``1×8×64 float32``: a tensor's shape and dtype."""
    if m.dtype == UNKNOWN_DTYPE:
        return "shape unknown"
    return f"{tensor_shape_text(m)} {m.dtype}"


def _read_dims(value: Any) -> tuple[str, ...] | None:
    return None if value is None else read_strs(value)


# ---- reading: one field table per record (see graph_checks: typed readers, nothing trusted) ----------------
_read_meta = interned(
    record(
        TensorMeta,
        (
            ("shape", read_shape, REQUIRED),
            ("dtype", read_name, REQUIRED),
            ("device", read_name, REQUIRED),
            ("nbytes", read_int, REQUIRED),
            ("dims", _read_dims, None),
        ),
        "tensor",
    )
)
_read_param = record(
    ParamInfo,
    (
        ("name", read_str, REQUIRED),
        ("shape", read_shape, REQUIRED),
        ("dtype", read_name, REQUIRED),
        ("trainable", read_bool, REQUIRED),
        ("is_buffer", read_bool, False),
    ),
    "parameter",
)
_read_call = record(
    ModuleCall,
    (
        ("id", read_str, REQUIRED),
        ("qualname", read_str, REQUIRED),
        ("cls", read_name, REQUIRED),
        ("parent", read_opt_str, REQUIRED),
        ("call_index", read_int, REQUIRED),
        ("num_params", read_int, REQUIRED),
        ("params", list_of(_read_param), REQUIRED),
        ("extra_repr", read_str, REQUIRED),
        ("attrs", read_pairs, REQUIRED),
        ("failed", read_bool, REQUIRED),
        ("depth", read_int, REQUIRED),
        ("builtin", read_bool, REQUIRED),
    ),
    "module call",
)
_read_node = record(
    Node,
    (
        ("id", read_str, REQUIRED),
        ("kind", read_name, REQUIRED),
        ("name", read_name, REQUIRED),
        ("parent", read_opt_str, REQUIRED),
        ("error", read_opt_str, REQUIRED),
        ("args", read_pairs, REQUIRED),
        ("source", read_opt_str, REQUIRED),
        ("params", read_strs, REQUIRED),
        ("outputs", list_of(_read_meta), REQUIRED),
        ("flops", read_int, 0),
        ("time_ms", _read_time_ms, None),  # absent in traces made before costs were
        ("values", read_node_values, ()),  # only in value traces
    ),
    "node",
)
_read_edge = record(
    Edge,
    (
        ("src", read_str, REQUIRED),
        ("dst", read_str, REQUIRED),
        ("tensor", read_str, REQUIRED),
        ("meta", _read_meta, REQUIRED),
        ("dst_arg", read_int, REQUIRED),
    ),
    "edge",
)
_read_error = record(
    ErrorInfo,
    (
        ("type", read_str, REQUIRED),
        ("message", read_str, REQUIRED),
        ("traceback", read_str, ""),
        ("node", read_opt_str, None),
    ),
    "error",
)
_read_graph = record(
    Graph,
    (
        ("nodes", list_of(_read_node), REQUIRED),
        ("edges", list_of(_read_edge), REQUIRED),
        ("module_calls", list_of(_read_call), REQUIRED),
        ("model_name", read_str, ""),
        ("error", lambda d: None if d is None else _read_error(d), None),
        ("versions", read_str_map, ()),
        ("measured", _read_measured, ()),
        ("notes", read_strs, ()),
        ("grads", read_grads, ()),
    ),
    "trace",
)


# ---- writing ---------------------------------------------------------------------------------------------
def _meta_to_dict(m: TensorMeta) -> dict[str, Any]:
    d: dict[str, Any] = {"shape": list(m.shape), "dtype": m.dtype, "device": m.device, "nbytes": m.nbytes}
    if m.dims is not None:  # written only when a size is symbolic: other traces' bytes stay as they were
        d["dims"] = list(m.dims)
    return d


def _call_to_dict(c: ModuleCall) -> dict[str, Any]:
    return {
        "id": c.id,
        "qualname": c.qualname,
        "cls": c.cls,
        "parent": c.parent,
        "call_index": c.call_index,
        "num_params": c.num_params,
        "extra_repr": c.extra_repr,
        "attrs": [list(a) for a in c.attrs],
        "failed": c.failed,
        "depth": c.depth,
        "builtin": c.builtin,
        "params": [
            {
                "name": p.name,
                "shape": list(p.shape),
                "dtype": p.dtype,
                "trainable": p.trainable,
                "is_buffer": p.is_buffer,
            }
            for p in c.params
        ],
    }


def _node_to_dict(n: Node) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": n.id,
        "kind": n.kind,
        "name": n.name,
        "parent": n.parent,
        "error": n.error,
        "args": [list(a) for a in n.args],
        "source": n.source,
        "params": list(n.params),
        "outputs": [_meta_to_dict(m) for m in n.outputs],
    }
    if n.flops:  # written only when present: most ops count none, old readers skip them
        d["flops"] = n.flops
    if n.time_ms is not None:
        d["time_ms"] = n.time_ms
    if n.values:
        d["values"] = [stats_to_dict(v) for v in n.values]
    return d


def _edge_to_dict(e: Edge) -> dict[str, Any]:
    return {
        "src": e.src,
        "dst": e.dst,
        "tensor": e.tensor,
        "meta": _meta_to_dict(e.meta),
        "dst_arg": e.dst_arg,
    }


def _error_to_dict(e: ErrorInfo) -> dict[str, Any]:
    return {"type": e.type, "message": e.message, "traceback": e.traceback, "node": e.node}
