"""What a trace must be before anything draws it: typed fields, references that resolve, parents that form a
tree.

A trace file is untrusted input. Every field of a JSON record goes through a reader that accepts only its own
type (an int field takes a JSON integer in range, never a float, a bool or a string), and the structure is
checked once after loading: unknown references, duplicate ids, parent cycles among module calls (a cycle made
``view`` loop forever) and a ``depth`` that disagrees with the parent chain (a call's depth sizes the app's
depth menu). Everything wrong is a ``TraceFormatError`` naming the record and the field.

A new dataclass field slots in with one line in its record's field table (name, reader, default for files
written before the field existed) and one in ``graph.py``'s writer; a test checks that every field is read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from torchvista_dash.model.errors import TorchvistaDashError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from torchvista_dash.model.graph import Graph

MAX_INT = 2**63 - 1  # sizes, counts and indices fit an int64 (what torch itself uses)
MAX_CALL_DEPTH = 500  # module nesting: each call is at least 2 frames, so Python's default recursion
# limit (1,000) stops a forward pass before this; pydot's recursion over clusters
# broke near 1,000
REQUIRED = object()  # a field table's default for fields every file has
MAX_TRACE_BYTES = 250_000_000  # default size limit of a trace file (README: "Trace files")
MAX_TRACE_BYTES_ENV = "TVD_MAX_TRACE_BYTES"


class TraceFormatError(TorchvistaDashError, ValueError):
    """A file or JSON document that is not a torchvista_dash trace (or not one we can read)."""


class TraceSizeError(TraceFormatError):
    """A trace file over the size limit (or a size limit that is not a number)."""


def trace_size_limit(max_bytes: int | None = None) -> int:
    """The size limit in bytes: ``max_bytes`` if given, else ``$TVD_MAX_TRACE_BYTES``, else MAX_TRACE_BYTES.

    Read when a file is loaded (not at import), so a bad value is a clear error there."""
    if max_bytes is None:
        raw = os.environ.get(MAX_TRACE_BYTES_ENV, "").strip()
        if not raw:
            return MAX_TRACE_BYTES
        try:
            max_bytes = int(raw.replace("_", ""))
        except ValueError:
            raise TraceSizeError(
                f"{MAX_TRACE_BYTES_ENV} must be a whole number of bytes (e.g. 500000000), got {raw!r}"
            ) from None
        source = f"{MAX_TRACE_BYTES_ENV}={raw}"
    else:
        source = f"max_bytes={max_bytes!r}"
    if type(max_bytes) is not int or max_bytes <= 0:
        raise TraceSizeError(f"the trace size limit must be a positive number of bytes, got {source}")
    return max_bytes


def _size(n: int) -> str:
    return f"{n:,} bytes" if n < 10**6 else f"{n / 1e6:,.1f} MB"


def check_size(size: int, limit: int, what: str) -> None:
    if size > limit:
        suggest = -(-size // 10**6) * 10**6
        raise TraceSizeError(
            f"{what} is {_size(size)}, over the {_size(limit)} limit for trace files; to load it "
            f"anyway, pass max_bytes={suggest} to load_trace() or set the environment variable "
            f"{MAX_TRACE_BYTES_ENV}={suggest}"
        )


class FieldError(Exception):
    """One field's value has the wrong type or range; the record reader adds which record it was."""


Reader = Callable[[Any], Any]
FieldTable = Sequence[tuple[str, Reader, Any]]


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def read_int(value: Any) -> int:
    """A JSON integer in 0..2**63-1 (``True``, ``1.5``, ``1e400`` and ``"3"`` are all refused)."""
    if type(value) is int and 0 <= value <= MAX_INT:
        return value
    raise FieldError(f"must be an integer from 0 to 2**63-1, got {_describe(value)}")


def read_str(value: Any) -> str:
    if type(value) is str:
        return value
    raise FieldError(f"must be a string, got {_describe(value)}")


def read_opt_str(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    raise FieldError(f"must be a string or null, got {_describe(value)}")


def read_bool(value: Any) -> bool:
    if type(value) is bool:
        return value
    raise FieldError(f"must be true or false, got {_describe(value)}")


def _list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise FieldError(f"must be a list, got {_describe(value)}")
    return value


def read_shape(value: Any) -> tuple[int, ...]:
    """A list of sizes (each an integer in range)."""
    items = _list(value)
    for s in items:
        if type(s) is not int or not 0 <= s <= MAX_INT:
            raise FieldError(f"must be a list of integers from 0 to 2**63-1, got {_describe(value)}")
    return tuple(items)


def read_strs(value: Any) -> tuple[str, ...]:
    items = _list(value)
    for s in items:
        if type(s) is not str:
            raise FieldError(f"must be a list of strings, got {_describe(value)}")
    return tuple(items)


def read_pairs(value: Any) -> tuple[tuple[str, str], ...]:
    """``[["key", "value"], ...]`` (call arguments, module attributes)."""
    out = []
    for p in _list(value):
        if type(p) is not list or len(p) != 2 or type(p[0]) is not str or type(p[1]) is not str:
            raise FieldError(f"must be a list of [string, string] pairs, got {_describe(value)}")
        out.append((p[0], p[1]))
    return tuple(out)


def read_str_map(value: Any) -> tuple[tuple[str, str], ...]:
    """A JSON object of strings to strings (``versions``), as sorted pairs."""
    if not isinstance(value, Mapping) or any(
        type(k) is not str or type(v) is not str for k, v in value.items()
    ):
        raise FieldError(f"must be an object of strings to strings, got {_describe(value)}")
    return tuple(sorted(value.items()))


def list_of(read_one: Reader) -> Reader:
    """A reader of a list whose items ``read_one`` reads (records keep their own error context)."""

    def read(value: Any) -> tuple[Any, ...]:
        return tuple(read_one(v) for v in _list(value))

    return read


def read_name(value: Any) -> str:
    """A string that repeats across records (op names, kinds, dtypes): kept once per load (see
    ``interned``)."""
    s = read_str(value)
    return _INTERN.setdefault(s, s)


def interned(read_one: Reader) -> Reader:
    """``read_one``, with equal results shared: a million edges carry a few hundred distinct tensor metas."""

    def read(value: Any) -> Any:
        obj = read_one(value)
        return _INTERN.setdefault(obj, obj)

    return read


_INTERN: dict[Any, Any] = {}  # cleared after each load (``forget_interned``); sharing it between threads is
# harmless: it only ever maps a validated immutable value to an equal one


def forget_interned() -> None:
    _INTERN.clear()


# inline checks for the fast path of ``record``: each mirrors its reader exactly
_INLINE: dict[Callable[[Any], Any], str] = {
    read_str: "type({v}) is str",
    read_name: "type({v}) is str",
    read_bool: "type({v}) is bool",
    read_opt_str: "({v} is None or type({v}) is str)",
    read_int: "(type({v}) is int and 0 <= {v} <= MAX_INT)",
}


def record(cls: type, table: FieldTable, what: str) -> Callable[[Any], Any]:
    """A reader that builds ``cls`` from a JSON object through ``table``; a FieldError names the record
    (``what`` and its id) and the field, nested records inside their parent's.

    The object is filled as ``cls(**fields)`` would (every field set; frozen dataclasses without
    ``__post_init__``), without the per-field ``object.__setattr__`` of a frozen ``__init__``. A fast path,
    generated from the table (as ``dataclasses`` generates ``__init__``), reads a well-formed record with the
    simple checks inlined; anything it doubts goes to the table-driven reader, which gives the message.
    """
    names = [f for f, _, _ in table]
    if hasattr(cls, "__post_init__") or set(names) != set(getattr(cls, "__dataclass_fields__", ())):
        raise TypeError(f"the field table of {cls.__name__} does not match its fields")
    new = object.__new__

    def slow(d: Any) -> Any:
        if not isinstance(d, Mapping):
            raise FieldError(f"must be a JSON object ({what}), got {_describe(d)}")
        fields = {}
        for name, reader, default in table:
            try:
                raw = d[name]
            except KeyError:
                if default is REQUIRED:
                    raise FieldError(f"{_which(what, d)}no field {name!r}") from None
                fields[name] = default
                continue
            try:
                fields[name] = reader(raw)
            except FieldError as exc:
                sep = " " if str(exc).startswith("must") else ": "
                raise FieldError(f"{_which(what, d)}field {name!r}{sep}{exc}") from None
        obj: Any = new(cls)
        obj.__dict__.update(fields)
        return obj

    return _fast_reader(cls, table, slow)


def _fast_reader(cls: type, table: FieldTable, slow: Callable[[Any], Any]) -> Callable[[Any], Any]:
    env: dict[str, Any] = {
        "slow": slow,
        "new": object.__new__,
        "cls": cls,
        "FieldError": FieldError,
        "MAX_INT": MAX_INT,
        "_intern": _INTERN.setdefault,
        "_missing": REQUIRED,
    }
    get, checks, calls, out = [], [], [], []
    for i, (name, reader, default) in enumerate(table):
        v = f"v{i}"
        env[f"r{i}"], env[f"d{i}"] = reader, default
        if default is REQUIRED:
            get.append(f"        {v} = d[{name!r}]")
        else:
            get.append(f"        {v} = d.get({name!r}, _missing)")
        inline = _INLINE.get(reader)
        if default is not REQUIRED:
            calls.append(
                f"    if {v} is _missing:\n        {v} = d{i}\n    else:\n"
                + (
                    f"        if not {inline.format(v=v)}:\n            return slow(d)\n"
                    if inline
                    else f"        {v} = r{i}({v})\n"
                )
                + (f"        {v} = _intern({v}, {v})" if reader is read_name else "        pass")
            )
        elif inline:
            checks.append(inline.format(v=v))
            if reader is read_name:
                calls.append(f"    {v} = _intern({v}, {v})")
        else:
            calls.append(f"    {v} = r{i}({v})")
        out.append(f"{name!r}: {v}")
    src = "\n".join(
        [
            "def read(d):",
            "    if type(d) is not dict:",
            "        return slow(d)",
            "    try:",
            *get,
            "    except KeyError:",
            "        return slow(d)",
            f"    if not ({' and '.join(checks) or 'True'}):",
            "        return slow(d)",
            "    try:",
            *("    " + line for c in calls for line in c.split("\n")),
            "    except FieldError:",
            "        return slow(d)",
            "    obj = new(cls)",
            f"    obj.__dict__.update({{{', '.join(out)}}})",
            "    return obj",
        ]
    )
    exec(compile(src, f"<record reader of {cls.__name__}>", "exec"), env)  # source built from our own table
    return env["read"]


def _which(what: str, d: Mapping[str, Any]) -> str:
    """``"node 'n:3': "``: the record an error is in (empty for the top level, the trace itself)."""
    if what == "trace":
        return ""
    ident = d.get("id")
    if type(ident) is str:
        return f"{what} {_describe(ident)}: "
    if what == "edge" and type(d.get("src")) is str and type(d.get("dst")) is str:
        return f"edge {_describe(d['src'])}->{_describe(d['dst'])}: "
    return f"a {what}: "


# ---- structure ------------------------------------------------------------------------------------------
def call_depths(graph: Graph) -> dict[str, int]:
    """Each call's depth derived from its parent chain (0 for a top-level call); a cycle or a missing parent
    is a TraceFormatError. Linear: each call is walked once."""
    parent = {c.id: c.parent for c in graph.module_calls}
    depth: dict[str, int] = {}
    for c in graph.module_calls:
        path: list[str] = []
        on_path: set[str] = set()
        cur: str | None = c.id
        while cur is not None and cur not in depth:
            if cur in on_path:
                raise TraceFormatError(
                    f"corrupt trace: module calls form a parent cycle through {cur!r} "
                    f"(a call cannot contain itself)"
                )
            if cur not in parent:
                raise TraceFormatError(f"corrupt trace: call {path[-1]!r} has unknown parent {cur!r}")
            path.append(cur)
            on_path.add(cur)
            cur = parent[cur]
        d = -1 if cur is None else depth[cur]
        for cid in reversed(path):
            d += 1
            depth[cid] = d
        if d > MAX_CALL_DEPTH:
            raise TraceFormatError(
                f"corrupt trace: module calls nest {d} deep (at {c.id!r}); the limit is {MAX_CALL_DEPTH}"
            )
    return depth


def check_structure(graph: Graph, node_kinds: Sequence[str]) -> None:
    """Referential integrity, acyclic parents and depths that agree with them; raise naming the first
    problem."""
    calls = graph.call_by_id
    if len(calls) != len(graph.module_calls):
        raise TraceFormatError(
            f"corrupt trace: duplicate module call id {_first_duplicate(graph.module_calls)!r}"
        )
    nodes = graph.node_by_id
    if len(nodes) != len(graph.nodes):
        raise TraceFormatError(f"corrupt trace: duplicate node id {_first_duplicate(graph.nodes)!r}")
    depths = call_depths(graph)
    for c in graph.module_calls:
        if c.depth != depths[c.id]:
            raise TraceFormatError(
                f"corrupt trace: call {c.id!r} says depth {c.depth}, but its parent chain "
                f"puts it at depth {depths[c.id]}"
            )
    kinds = frozenset(node_kinds)
    for n in graph.nodes:
        if n.kind not in kinds:
            raise TraceFormatError(
                f"corrupt trace: node {n.id!r} has unknown kind {_describe(n.kind)} "
                f"(one of {', '.join(node_kinds)})"
            )
        if n.parent is not None and n.parent not in calls:
            raise TraceFormatError(f"corrupt trace: node {n.id!r} has unknown parent {n.parent!r}")
    for e in graph.edges:
        if e.src not in nodes or e.dst not in nodes:
            raise TraceFormatError(f"corrupt trace: edge {e.src!r}->{e.dst!r} names an unknown node")
    if graph.error is not None and graph.error.node is not None and graph.error.node not in nodes:
        raise TraceFormatError(f"corrupt trace: the error names an unknown node {graph.error.node!r}")


def _first_duplicate(items: Sequence[Any]) -> str:
    seen: set[str] = set()
    for x in items:
        if x.id in seen:
            return x.id
        seen.add(x.id)
    return ""
