"""torch → Graph: record one forward pass with a TorchFunctionMode and global module hooks."""

from __future__ import annotations

from .api import trace_model

__all__ = ["trace_model"]
