"""The package's errors share one base, so a caller can catch every one of them in one clause.

Each is also the built-in type it has always been (``TraceFormatError`` is a ``ValueError``, ``UnknownTrace``
a ``KeyError``, ``GraphvizError`` a ``RuntimeError``), so existing ``except`` clauses keep working.
"""

from __future__ import annotations


class TorchvistaDashError(Exception):
    """Base of every error this package raises on purpose (bad input, a missing program, a gone trace)."""
