"""torch.fx → Graph: the reader every FX-based source shares (``read.py``, with ``calls.py``, ``describe.py``,
``flops.py``), and FX GraphModules themselves (``module.py``: ``call_module`` nodes as module calls)."""

from __future__ import annotations

from torchvista_dash.frontends.fx.module import graph_of_fx

__all__ = ["graph_of_fx"]
