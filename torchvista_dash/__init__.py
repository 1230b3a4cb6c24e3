"""torchvista_dash: an interactive, collapsible picture of a PyTorch model's forward pass."""

from __future__ import annotations

from typing import Any

from torchvista_dash.compare import Diff, compare
from torchvista_dash.model.errors import TorchvistaDashError
from torchvista_dash.model.graph import Graph, TraceFormatError
from torchvista_dash.traced import Trace, from_exported, from_fx, load_trace, trace_model

__version__ = "0.1.0"
__all__ = [
    "Diff",
    "Graph",
    "ModelGraph",
    "Trace",
    "TorchvistaDashError",
    "TraceFormatError",
    "compare",
    "configure",
    "from_exported",
    "from_fx",
    "install",
    "load_trace",
    "trace_model",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name == "ModelGraph":  # imported lazily: dash is only needed by the app
        from torchvista_dash.app.component.aio import ModelGraph

        return ModelGraph
    if name == "configure":  # where traces are shared: configure(store="redis://host:6379/0")
        from torchvista_dash.app.traces.shared import configure_package

        return configure_package
    if name == "install":  # set up a Dash app of your own to host ModelGraphs (app/server/install.py)
        from torchvista_dash.app.server.install import install

        return install
    raise AttributeError(f"module 'torchvista_dash' has no attribute {name!r}")
