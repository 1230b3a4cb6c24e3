"""The interactive app: the ``ModelGraph`` Dash component, its callbacks, servers and notebook ``show()``.

Only this package imports dash.
"""

from __future__ import annotations

from .component import ModelGraph

__all__ = ["ModelGraph"]
