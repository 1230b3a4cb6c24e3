"""Where in the user's code an op was called: the first frame outside torch and this package.

Read while the op runs (frames move on), in a short walk: code objects are classified once (by id: hashing a
code object hashes its bytecode), and inside a built-in module (``nn.LayerNorm``) the site of the module's
call, found once per call, stands for the frames of the module's own code. A location is kept as (file,
code, instruction offset): ``f_lineno`` scans the code's line table on every read (about 1 µs at the end of
an 80-line ``forward``), so the line is looked up after the pass, once per instruction (``line_text``).
"""

from __future__ import annotations

import os
from typing import Any

import torch

from torchvista_dash.frontends.trace.describe import source_path

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# Only the tracer itself is skipped when looking for the user's line: models defined elsewhere in this
# package (demos.py) are user code, and their source lines are what the details panel should show.
_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class Sites:
    """The recorder's source lookups (a mixin: ``sites`` is the stack of open calls' sites)."""

    code_cache: dict[int, tuple[Any, str | None]]
    sites: list[Any]  # per open module call: where a built-in module was called from

    def source(self, f: Any) -> Any:
        """(file, code, offset) of the innermost frame from ``f`` (the op's caller) outside torch and this
        package, made "file:line" after the pass (``line_text``); or None.

        If the first few frames are all torch code and the innermost module call is a built-in one, the answer
        is that call's site (found once by the pre-hook): the frames in between are the module's own.
        """
        site, rest = self._walk(f, 4)
        if site is not None or rest is None:
            return site
        site = self.sites[-1] if self.sites else None
        return site if site is not None else self._walk(rest)[0]

    def _classify(self, code: Any) -> tuple[Any, str | None]:
        fn = code.co_filename
        inside = fn.startswith(_TORCH_DIR) or fn.startswith(_PKG_DIR) or fn.startswith("<frozen")
        e = self.code_cache[id(code)] = (code, None if inside else source_path(fn))
        return e

    def _walk(self, f: Any, limit: int = -1) -> tuple[tuple[str, Any, int] | None, Any]:
        """(file, code, offset) of the first frame from ``f`` outwards that is outside torch and this package,
        looking at most ``limit`` frames (-1: all); and the frame it stopped at (None: it ran out of
        frames)."""
        cache = self.code_cache
        while f is not None and limit != 0:
            code = f.f_code
            e = cache.get(id(code))
            if e is None or e[0] is not code:
                e = self._classify(code)
            if e[1] is not None:
                return (e[1], code, f.f_lasti), f
            f = f.f_back
            limit -= 1
        return None, f


_LINES: dict[tuple[int, int], tuple[Any, str]] = {}  # (id(code), offset) -> (code, "file:line")
_BOUND = 200_000


def line_text(where: Any) -> str | None:
    """ "file:line" of what ``source``/``_walk`` returned (None stays None), as ``frame.f_lineno`` reads
    it."""
    if where is None:
        return None
    path, code, offset = where
    key = (id(code), offset)
    e = _LINES.get(key)
    if e is None or e[0] is not code:
        line = code.co_firstlineno if offset < 0 else None
        for start, end, ln in code.co_lines():  # what PyCode_Addr2Line reads (f_lineno: None if no line)
            if start <= offset < end:
                line = ln
                break
        if len(_LINES) > _BOUND:
            _LINES.clear()
        e = _LINES[key] = (code, f"{path}:{line}")
    return e[1]
