"""The runnable apps in apps/: they import, expose ``server`` and serve pages with their graphs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from torchvista_dash.render import plotlyjs

APPS = Path(__file__).resolve().parents[2] / "apps"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"tvd_apps_{name}", APPS / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "name, expect",
    [
        ("gallery", ["MLP", "nodes:labels"]),
        ("embed_example", ["Transformer encoder", "GPT-style decoder", '"aio_id":"enc"', '"aio_id":"dec"']),
    ],
)
def test_app_serves_its_graphs(name: str, expect: list[str]) -> None:
    mod = load(name)
    client = mod.server.test_client()
    assert client.get("/").status_code == 200
    layout = client.get("/_dash-layout").get_data(as_text=True)
    for text in expect:
        assert text in layout, text
    deps = client.get("/_dash-dependencies").get_json()
    assert any("ModelGraph" in d["output"] for d in deps)
    index = client.get("/").get_data(as_text=True)
    if plotlyjs.basic_bundle() is not None:  # the scatter-only plotly.js is served and loaded first
        assert index.index(plotlyjs.URL_PATH) < index.index("dash_renderer")
        assert client.get("/" + plotlyjs.URL_PATH).get_data()[:200].find(b"plotly.js") >= 0
    else:
        assert plotlyjs.URL_PATH not in index
