"""torch.export → Graph: an ``ExportedProgram`` (``program.py``) or a saved ``.pt2`` file (``load.py``)."""

from __future__ import annotations

from torchvista_dash.frontends.export.program import graph_of_program

__all__ = ["graph_of_program"]
