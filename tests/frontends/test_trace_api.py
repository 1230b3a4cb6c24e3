"""trace/ returns plain data, ``(Graph, exception)``; the Trace facade wraps it (the pipeline runs one
way)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

import torchvista_dash
from torchvista_dash.frontends.trace import trace_graph
from torchvista_dash.model.graph import Graph

TRACE_DIR = Path(torchvista_dash.__file__).parent / "frontends" / "trace"


class Boom(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) @ torch.ones(5, 5)


def test_trace_graph_returns_the_graph_and_no_error() -> None:
    graph, error = trace_graph(torch.nn.Linear(3, 2), torch.rand(1, 3), versions=(("extra", "1"),))
    assert isinstance(graph, Graph) and error is None
    assert [n.name for n in graph.nodes if n.kind == "op"] == ["linear"]
    assert dict(graph.versions)["torch"] == torch.__version__ and dict(graph.versions)["extra"] == "1"


def test_trace_graph_returns_the_exception_without_warning(recwarn: pytest.WarningsRecorder) -> None:
    graph, error = trace_graph(Boom(), torch.rand(2, 3))
    assert isinstance(error, RuntimeError)
    assert graph.error is not None and graph.error.node is not None
    assert graph.node_by_id[graph.error.node].name == "matmul"
    assert not list(recwarn)  # warning is the facade's job


def test_the_facade_adds_the_package_version_and_warns() -> None:
    with pytest.warns(UserWarning, match="Boom raised RuntimeError"):
        t = torchvista_dash.trace_model(Boom(), torch.rand(2, 3))
    assert isinstance(t.error, RuntimeError)
    assert dict(t.graph.versions)["torchvista_dash"] == torchvista_dash.__version__


def test_nothing_in_trace_imports_the_facade_or_the_package_root() -> None:
    for path in TRACE_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torchvista_dash"):
                parts = (node.module or "").split(".")
                assert len(parts) > 1, f"{path.name} imports the package root"
                assert parts[1] not in ("traced", "app", "render", "layout", "view"), (
                    f"{path.name} imports {node.module}"
                )
