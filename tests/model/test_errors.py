"""One clause catches the package's errors, and each is still the built-in type callers already catch."""

from __future__ import annotations

import pytest

import torchvista_dash
from torchvista_dash import TorchvistaDashError, TraceFormatError
from torchvista_dash.app.traces.registry import UnknownTrace
from torchvista_dash.layout.graphviz.run import GraphvizError, GraphvizNotFound


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (TraceFormatError, ValueError),
        (UnknownTrace, KeyError),
        (GraphvizError, RuntimeError),
        (GraphvizNotFound, RuntimeError),
    ],
)
def test_each_error_is_the_base_and_its_builtin(error: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(error, TorchvistaDashError) and issubclass(error, builtin)


def test_a_bad_trace_file_is_caught_by_the_base(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(TorchvistaDashError):
        torchvista_dash.load_trace(bad)
