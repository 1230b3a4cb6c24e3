"""A forward pass that raises gives a partial trace: failing op marked, its inputs wired, its modules
failed."""

from __future__ import annotations

import traceback

import pytest
import torch
from support_models import FailingNet

from torchvista_dash import load_trace, trace_model


@pytest.fixture()
def failed_trace():
    torch.manual_seed(0)
    with pytest.warns(UserWarning, match=r"FailingNet raised RuntimeError.*raise_if_failed"):
        return trace_model(FailingNet(), torch.randn(2, 8))


def test_failing_cat_marked_with_inputs_connected(failed_trace) -> None:
    g = failed_trace.graph
    assert g.error is not None and g.error.type == "RuntimeError"
    bad = g.node_by_id[g.error.node]
    assert bad.name == "cat" and bad.kind == "op" and bad.parent == "mod:outer.inner"
    assert bad.error is not None and "Sizes of tensors must match" in bad.error
    assert bad.outputs == ()
    preds = sorted((g.node_by_id[e.src].parent, e.meta.shape) for e in g.edges if e.dst == bad.id)
    assert preds == [("mod:outer.inner.proj", (2, 4)), ("mod:outer.pre", (2, 8))]
    assert dict(bad.args) == {"tensors": "[Tensor[2×4 float32], Tensor[2×8 float32]]", "dim": "0"}
    # only that op carries an error
    assert [n.id for n in g.nodes if n.error] == [bad.id]


def test_enclosing_calls_failed_others_not(failed_trace) -> None:
    g = failed_trace.graph
    failed = {c.id for c in g.module_calls if c.failed}
    assert failed == {"mod:(root)", "mod:outer", "mod:outer.inner"}
    assert {c.id for c in g.module_calls} == failed | {"mod:stem", "mod:outer.pre", "mod:outer.inner.proj"}
    assert "mod:head" not in g.call_by_id  # never reached
    assert not any(n.kind == "output" for n in g.nodes)


def test_error_keeps_original_exception_and_reraises(failed_trace) -> None:
    t = failed_trace
    assert isinstance(t.error, RuntimeError)
    frames = traceback.extract_tb(t.error.__traceback__)
    assert any(f.name == "forward" and f.filename.endswith("support_models.py") for f in frames)
    assert "support_models.py" in t.graph.error.traceback
    with pytest.raises(RuntimeError, match="Sizes of tensors must match") as info:
        t.raise_if_failed()
    assert info.value is t.error


def test_failed_trace_round_trips_through_json(failed_trace, tmp_path) -> None:
    path = failed_trace.save(tmp_path / "failed.json")
    with pytest.warns(UserWarning, match="forward pass failed"):
        loaded = load_trace(path)
    assert loaded.graph == failed_trace.graph
    with pytest.raises(RuntimeError, match="Sizes of tensors"):
        loaded.raise_if_failed()


def test_caught_op_errors_are_not_failures() -> None:
    class Fallback(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            try:
                y = torch.cat([x, x.T[:1]], dim=1)  # wrong shapes; the model handles it
            except RuntimeError:
                y = x
            return self.fc(y)

    t = trace_model(Fallback(), torch.randn(2, 4))
    assert not t.failed and t.error is None
    g = t.graph
    assert not any(n.error for n in g.nodes) and not any(c.failed for c in g.module_calls)
    assert "cat" not in [n.name for n in g.nodes]
    assert [n.id for n in g.nodes] == [f"n:{i}" for i in range(len(g.nodes))]  # no gaps
    assert all(e.src in g.node_by_id and e.dst in g.node_by_id for e in g.edges)


def test_python_error_outside_any_op_marks_modules() -> None:
    class Inner(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.shape[0] > 1:
                raise ValueError("batch too large for Inner")
            return x

    class Outer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ok = torch.nn.Linear(3, 3)
            self.inner = Inner()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(self.ok(x))

    with pytest.warns(UserWarning, match="ValueError"):
        t = trace_model(Outer(), torch.randn(2, 3))
    g = t.graph
    assert g.error is not None and g.error.node is None and g.error.type == "ValueError"
    assert {c.id for c in g.module_calls if c.failed} == {"mod:(root)", "mod:inner"}
    assert [n.name for n in g.nodes if n.kind == "op"] == ["linear"]


class ConvGivenAList(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = torch.nn.Linear(3, 3)
        self.conv = torch.nn.Conv2d(1, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pre(x).reshape(1, 1, 3, 3)
        return self.conv([y])  # rejected by torch's argument parser, before any dispatch


def test_a_call_rejected_before_dispatch_is_the_failing_op_with_its_inputs() -> None:
    with pytest.warns(UserWarning, match="TypeError"):
        t = trace_model(ConvGivenAList(), torch.randn(3, 3))
    g = t.graph
    assert g.error is not None and g.error.type == "TypeError" and g.error.node is not None
    bad = g.node_by_id[g.error.node]
    assert bad.name == "conv2d" and bad.parent == "mod:conv" and bad.kind == "op"
    assert bad.error is not None and "invalid combination of arguments" in bad.error
    preds = [(g.node_by_id[e.src].kind, g.node_by_id[e.src].name) for e in g.edges if e.dst == bad.id]
    assert preds == [("op", "reshape"), ("parameter", "conv.weight"), ("parameter", "conv.bias")]
    assert bad.params == ("conv.weight", "conv.bias")
    assert bad.source is not None and bad.source.endswith(
        f"test_trace_errors.py:{_line_of('self.conv([y])')}"
    )
    assert {c.id for c in g.module_calls if c.failed} == {"mod:(root)", "mod:conv"}
    v = t.view(depth=1)
    assert next(n for n in v.nodes if n.id == "mod:conv").failed


def test_a_tensor_method_rejected_before_dispatch_is_recorded_too() -> None:
    class BadView(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            shape = [x]
            return x.view(shape)

    with pytest.warns(UserWarning, match="TypeError"):
        t = trace_model(BadView(), torch.randn(4))
    g = t.graph
    assert g.error is not None and g.error.node is not None
    bad = g.node_by_id[g.error.node]
    assert bad.name == "view" and bad.parent == "mod:(root)"
    # the tensor it was called on, and the tensor inside the list, both from the input
    assert [g.node_by_id[e.src].kind for e in g.edges if e.dst == bad.id] == ["input", "input"]


def test_a_type_error_of_user_code_gets_no_op_node() -> None:
    def helper(a: int, b: int) -> int:
        return a + b

    class UserBug(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * helper(1, "2")  # type: ignore[arg-type]

    with pytest.warns(UserWarning, match="TypeError"):
        t = trace_model(UserBug(), torch.randn(2))
    assert t.graph.error is not None and t.graph.error.node is None
    assert not [n for n in t.graph.nodes if n.error]


def _line_of(text: str) -> int:
    with open(__file__, encoding="utf-8") as f:
        return next(i for i, line in enumerate(f, 1) if text in line and "return" in line)
