"""torchvista_dash: an interactive, collapsible picture of a PyTorch model's forward pass."""

from __future__ import annotations

from typing import Any

from .compare import Diff, compare
from .graph import Graph, TraceFormatError
from .traced import Trace, load_trace, trace_model

__version__ = "0.1.0"
__all__ = ["Diff", "Graph", "ModelGraph", "Trace", "TraceFormatError", "compare", "load_trace", "trace_model",
           "__version__"]


def __getattr__(name: str) -> Any:
    if name == "ModelGraph":  # imported lazily: dash is only needed by the app
        from .app.aio import ModelGraph

        return ModelGraph
    raise AttributeError(f"module 'torchvista_dash' has no attribute {name!r}")
