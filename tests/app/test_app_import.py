"""Importing the package changes no Dash or Flask app: no route, no callback, no signal receiver, no thread.
Set-up is explicit, on the app it is for: ``install(app)`` (make_app does it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, threading
import flask, dash
from dash import _callback
from dash._hooks import hooks
import torchvista_dash, torchvista_dash.app
from torchvista_dash.app.traces import state, pictures, precompute, firstview, progress
from torchvista_dash.app.http import picture_routes
from torchvista_dash.app.component import aio, callbacks, component
from torchvista_dash.app.server import server, install
from torchvista_dash import ModelGraph
found = {
    "threads": sorted(t.name for t in threading.enumerate() if t is not threading.main_thread()),
    "request_started": len(flask.request_started.receivers),
    "request_tearing_down": len(flask.request_tearing_down.receivers),
    "route_hooks": len(hooks.get_hooks("routes")),
    "setup_hooks": len(hooks.get_hooks("setup")),
    "callbacks_waiting": len(_callback.GLOBAL_CALLBACK_LIST),
}
app = dash.Dash("users_app")
found["user_app_routes"] = [r for r in app.routes if "_tvd" in r]
found["user_app_rules"] = [r.rule for r in app.server.url_map.iter_rules() if "_tvd" in r.rule]
torchvista_dash.install(app)
torchvista_dash.install(app)  # once, however often asked
found["installed_rules"] = [r.rule for r in app.server.url_map.iter_rules() if "_tvd" in r.rule]
found["installed_receivers"] = len(flask.request_started.receivers)
other = dash.Dash("another_app")
found["other_app_rules"] = [r.rule for r in other.server.url_map.iter_rules() if "_tvd" in r.rule]
print(json.dumps(found))
"""


def test_importing_sets_nothing_up_and_install_sets_up_one_app() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout
    found = json.loads(out.strip().splitlines()[-1])
    assert found["threads"] == []
    assert found["request_started"] == found["request_tearing_down"] == 0
    assert found["route_hooks"] == found["setup_hooks"] == 0 and found["callbacks_waiting"] == 0
    assert found["user_app_routes"] == found["user_app_rules"] == []
    assert found["installed_rules"] == ["/_tvd/picture/<key>.svg"]
    assert found["installed_receivers"] == 1
    assert found["other_app_rules"] == []  # installing one app adds nothing to the next
