"""What is drawn: the types shared by ``view`` (which builds them) and ``layout``/``render`` (which read
them).

Kept apart from ``view.py`` so the contract between the pipeline stages is one short file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from torchvista_dash.model.graph import TensorMeta

MAX_LABEL_CHARS = 100  # a drawn label's length; longer names are cut with "…" (hover and details show it all)


def label_text(text: str) -> str:
    """What a box or edge shows of ``text``: non-printable characters (NUL, escapes, newlines, lone
    surrogates) as visible ``\\x..``/``\\u..`` escapes, at most MAX_LABEL_CHARS characters. Names come from
    untrusted files: raw control characters broke Graphviz, and a 10,000-character label made a box wider than
    dot allows."""
    text = printable(text)
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 1] + "…"


def printable(text: str) -> str:
    """``text`` with each non-printable character as a visible escape (``a\\x00b``)."""
    return text if text.isprintable() else "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(c: str) -> str:
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


VisibleKind = Literal["input", "output", "op", "constant", "parameter", "module", "folded"]
IO_PREFIX = (
    "io:"  # ids of grouped inputs/outputs ("io:output:cache", iogroups.py): a box that opens like a module
)


def io_side(vid: str, kind: str) -> str | None:
    """ "input" or "output" for an input/output box or group (drawn on the first/last rank), else None."""
    if kind in ("input", "output"):
        return kind
    if vid.startswith(IO_PREFIX):
        return vid[len(IO_PREFIX) :].split(":", 1)[0]
    return None


@dataclass(frozen=True)
class ViewSpec:
    """A view: which module calls are open, plus drawing options. Hashable: it keys the layout cache."""

    expanded: frozenset[str] = frozenset()  # ModuleCall ids that are open (clusters)
    fold_repeats: bool = True  # fold runs of identical sibling calls into "Cls ×N"
    unfolded: frozenset[str] = frozenset()  # folded-group ids the user opened again
    show_params: bool = False  # draw parameter / constant nodes
    pinned: frozenset[str] = frozenset()  # run members drawn on their own; the rest of the run stays
    # folded around them ("Block ×7", h.7, "Block ×4")


@dataclass(frozen=True)
class VisibleNode:
    """One box on screen: a graph node, a collapsed module call, or a folded run of calls."""

    id: str  # graph node id, ModuleCall id, or folded-group id ("fold:<first call id>")
    kind: VisibleKind
    label: str  # main text ("linear", "encoder: BertEncoder", "GPT2Block ×12")
    parent: str | None  # id of the cluster (expanded ModuleCall) it sits directly in
    sublabel: str = ""  # second line (class name, shape, ...)
    failed: bool = False  # the failing op, or a collapsed call that contains it
    count: int = 1  # for folded groups: how many calls were folded
    members: tuple[str, ...] = ()  # for modules: (call id,); for folded groups: every folded call id


@dataclass(frozen=True)
class VisibleEdge:
    """The tensors from one visible box to another, drawn as one edge: parallel edges carrying one tensor
    are one, and so are several tensors between the same two boxes (80 folded layers' keys and values into
    the cache box: one edge labelled "1×8×6×128 ×160", not 160 side by side)."""

    src: str
    dst: str
    tensor: str  # the first tensor it carries
    meta: TensorMeta
    label: str = ""  # shape text drawn on the edge, e.g. "1×32×768"
    count: int = 1  # how many distinct tensors it carries
    nbytes: int = 0  # their bytes together


@dataclass(frozen=True)
class Cluster:
    """An expanded module call: a box around its visible contents."""

    id: str  # ModuleCall id
    label: str  # "encoder.layer.0: BertLayer"
    parent: str | None  # enclosing cluster id
    failed: bool = False


@dataclass(frozen=True)
class VisibleGraph:
    """Everything one view draws; plain data, pure function of (Graph, ViewSpec)."""

    nodes: tuple[VisibleNode, ...]
    edges: tuple[VisibleEdge, ...]
    clusters: tuple[Cluster, ...]
    spec: ViewSpec
    notes: tuple[str, ...] = field(default=())  # e.g. "auto-collapsed below depth 3: 5,230 nodes over budget"

    @cached_property
    def _hash(self) -> int:
        return hash((self.nodes, self.edges, self.clusters, self.spec, self.notes))

    def __hash__(self) -> int:
        # a view keys the layout cache, which hashes it on every lookup and insert: hashing hundreds of nodes
        # and edges each time cost more than a cache hit's own work, so the hash is computed once
        return self._hash

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state.pop("_hash", None)  # str hashes differ between processes: a pickled view rehashes on load
        return state
