"""The interactive app: the ``ModelGraph`` Dash component, its callbacks, servers and notebook ``show()``.

Only this package imports dash. ``ModelGraph`` here (and as ``torchvista_dash.ModelGraph``) is the one for
your own Dash app (aio.py: its callbacks are defined when the first one is made; ``install(app)`` sets an app
up explicitly); the package's own apps use ``component.ModelGraph`` and are installed when made.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ModelGraph", "install"]


def __getattr__(name: str) -> Any:
    if name == "ModelGraph":
        from torchvista_dash.app.component.aio import ModelGraph

        return ModelGraph
    if name == "install":
        from torchvista_dash.app.server.install import install

        return install
    raise AttributeError(f"module 'torchvista_dash.app' has no attribute {name!r}")
