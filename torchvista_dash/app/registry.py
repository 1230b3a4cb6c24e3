"""Server-side registry of traces, keyed by trace id (a content hash), shared by every app in the process.

The browser only ever holds a trace id and its own expand state, so sessions never share state and the
server needs no per-session memory.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..traced import Trace

_lock = threading.Lock()
_traces: dict[str, Trace] = {}


class UnknownTrace(KeyError):
    """A trace id the server does not hold (e.g. the server restarted since the page was loaded)."""

    def __str__(self) -> str:
        return (f"no trace with id {self.args[0]!r} on this server (it restarted since the page was loaded?); "
                "show the trace again")


def register(trace: Trace) -> str:
    """Keep ``trace`` alive in the registry and return its id (the graph's content hash, computed once)."""
    tid = trace.id
    with _lock:
        _traces.setdefault(tid, trace)
    return tid


def get(trace_id: str) -> Trace:
    with _lock:
        try:
            return _traces[trace_id]
        except KeyError:
            raise UnknownTrace(trace_id) from None
