"""torch → Graph: record one forward pass with a TorchFunctionMode and global module hooks.

``trace_graph`` returns ``(Graph, exception or None)``; the ``Trace`` facade in ``traced.py`` wraps it.
"""

from __future__ import annotations

from torchvista_dash.frontends.trace.api import trace_graph, user_stacklevel

__all__ = ["trace_graph", "user_stacklevel"]
