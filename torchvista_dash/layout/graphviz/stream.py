"""Reading dot's JSON while dot is still writing it.

dot writes its ``-Tjson0`` document over the last few milliseconds of its run (5 ms of an 80 ms layout of
BERT's every-op view). ``JsonStream`` cuts what has arrived into the complete elements of the top-level
``objects`` and ``edges`` arrays and hands them to a ``LayoutReader`` at once, so by the time dot exits
most of the document has been read. It relies on dot's pretty-printing: top-level array elements open and
close at four spaces of indent, the arrays close at two (JSON strings hold no raw newlines, so text never
looks like structure). Output in any other shape is not an error: it is read as a whole at the end.
"""

from __future__ import annotations

from typing import Any

import orjson

from torchvista_dash.layout.graphviz.run import GraphvizError
from torchvista_dash.layout.single.dot import DotNames
from torchvista_dash.layout.single.parse import LayoutReader, parse_json
from torchvista_dash.layout.types import Layout
from torchvista_dash.view.types import VisibleGraph

_OBJECTS = b'\n  "objects": ['
_EDGES = b'\n  "edges": ['
_ELEMENT_END = b"\n    }"  # closes an element of a top-level array
_ARRAY_END = b"\n  ]"  # closes a top-level array
_DOC_END = b"\n}"


class _Unexpected(Exception):
    """The output is not shaped as expected: read it as a whole instead."""


class JsonStream:
    """Feed it dot's output in chunks as they arrive (``feed``), then take the Layout (``layout``)."""

    def __init__(self, vg: VisibleGraph, names: DotNames, rankdir: str) -> None:
        self.vg, self.names, self.rankdir = vg, names, rankdir
        self.reader = LayoutReader(vg, names, rankdir)
        self.buf = bytearray()
        self.pos = 0  # start of what has not been read yet
        self.section = "head"  # head → objects → between → edges → done; "whole" once it gave up
        self.head_end = 0  # where the top-level keys before "objects" end

    def feed(self, chunk: bytes) -> None:
        self.buf += chunk
        if self.section == "whole":
            return
        try:
            self._advance()
        except (_Unexpected, ValueError, KeyError, TypeError, GraphvizError):
            self.section = "whole"  # start again from the whole document at the end

    def layout(self) -> Layout:
        """The Layout, once dot has exited (all its output fed)."""
        if self.section == "done":
            try:
                head = bytes(self.buf[: self.head_end]).rstrip().rstrip(b",") + b"}"
                bb = orjson.loads(head).get("bb", "0,0,0,0")
                return self.reader.layout(bb)
            except (ValueError, GraphvizError):
                pass
        return parse_json(bytes(self.buf), self.vg, self.names, self.rankdir)

    def _advance(self) -> None:
        buf = self.buf
        while True:
            if self.section == "head":
                at = buf.find(_OBJECTS, self.pos)
                if at < 0:
                    if len(buf) > 1 << 16:  # the document does not start as dot's JSON does
                        raise _Unexpected
                    return
                self.head_end, self.pos, self.section = at, at + len(_OBJECTS), "objects"
            elif self.section in ("objects", "edges"):
                end = buf.find(_ARRAY_END, self.pos)
                if end >= 0:  # the rest of this array is here
                    self._read(self.pos, end)
                    self.pos = end + len(_ARRAY_END)
                    self.section = "between" if self.section == "objects" else "done"
                    continue
                last = buf.rfind(_ELEMENT_END, self.pos)
                if last < 0:
                    return
                self._read(self.pos, last + len(_ELEMENT_END))
                self.pos = last + len(_ELEMENT_END)
                return
            elif self.section == "between":
                at = buf.find(_EDGES, self.pos)
                if at >= 0:
                    self.pos, self.section = at + len(_EDGES), "edges"
                elif buf.find(_DOC_END, self.pos) >= 0:  # no edges at all
                    self.section = "done"
                else:
                    return
            else:
                return

    def _read(self, start: int, end: int) -> None:
        """Hand the complete elements in ``buf[start:end]`` to the reader."""
        region = bytes(self.buf[start:end]).strip().lstrip(b",")
        if not region:
            return
        elements: list[dict[str, Any]] = orjson.loads(b"[" + region + b"]")
        if self.section == "objects":
            self.reader.objects(elements)
        else:
            self.reader.edges(elements)
