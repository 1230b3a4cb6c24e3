"""Our pages load plotly's scatter-only bundle when it is installed, and fall back cleanly when it is not."""

from __future__ import annotations

import pytest
import torch
from conftest import STRICT
from torch import nn

from torchvista_dash import trace_model
from torchvista_dash.render import plotlyjs


@pytest.fixture()
def small_trace():
    return trace_model(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), torch.randn(1, 4))


def test_make_installs_the_matching_basic_bundle():
    path = plotlyjs.basic_bundle()
    if path is None:
        if STRICT:
            pytest.fail("the scatter-only plotly.js is missing: `make plotly-basic` fetches it with npm")
        pytest.skip("plotly.js-basic not installed (make plotly-basic)")
    head = path.read_text(encoding="utf-8")[:400]
    assert "basic" in head and f" v{plotlyjs.expected_version()}" in head


def test_exported_html_embeds_the_basic_bundle(tmp_path, small_trace, dot_binary):
    if plotlyjs.basic_bundle() is None:
        pytest.skip("plotly.js-basic not installed")
    page = small_trace.to_html(tmp_path / "m.html").read_text(encoding="utf-8")
    assert "plotly.js (basic - minified)" in page
    assert len(page) < 2_000_000  # the full bundle alone is 4.8 MB


def test_wrong_version_falls_back_to_the_full_bundle(tmp_path, monkeypatch, small_trace, dot_binary):
    fake = tmp_path / "plotly-basic.min.js"
    fake.write_text("/**\n* plotly.js v0.0.1\n*/\nwindow.Plotly = {};\n", encoding="utf-8")
    monkeypatch.setenv("TVD_PLOTLY_JS", str(fake))
    with pytest.warns(UserWarning, match="make plotly-basic"):
        assert plotlyjs.basic_bundle() is None
    page = small_trace.to_html(tmp_path / "m.html").read_text(encoding="utf-8")
    assert "window.Plotly = {}" not in page and len(page) > 4_000_000


def test_missing_bundle_falls_back(tmp_path, monkeypatch):
    monkeypatch.setenv("TVD_PLOTLY_JS", str(tmp_path / "absent.js"))
    assert plotlyjs.basic_bundle() is None and plotlyjs.script_tag() is None
