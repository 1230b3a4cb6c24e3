"""``ModelGraph`` in your own Dash app: the All-in-One pattern.

The first ModelGraph made defines the ModelGraph callbacks with ``dash.callback``, which Dash hands to the
first app that starts, as for any All-in-One component; a ModelGraph made after an app took that set defines
a fresh one, so each app started in the same process gets its own (importing this module defines nothing).
``torchvista_dash.install(app)`` on your app adds the picture route (short picture URLs instead of data URIs)
and registers the callbacks on the app itself:

    from torchvista_dash import ModelGraph
    app.layout = html.Div([ModelGraph(trace, id="enc")])
"""

from __future__ import annotations

from typing import Any

from torchvista_dash.app.component import callbacks
from torchvista_dash.app.component.component import ModelGraph as _ModelGraph

__all__ = ["ModelGraph"]


class ModelGraph(_ModelGraph):
    __doc__ = _ModelGraph.__doc__

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        callbacks.for_user_app()
        super().__init__(*args, **kwargs)
