"""The function mode queues ops and the recorder records them later (frontends/trace/mode.py): what is
recorded is what each op saw when it ran, and the queue keeps no tensor alive for long."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from torchvista_dash import trace_model
from torchvista_dash.frontends.trace import mode


def _ops(t):  # noqa: ANN001, ANN202 - test helper
    return [n for n in t.graph.nodes if n.kind == "op"]


class _ListChanged(torch.nn.Module):
    """torch.cat of a list the model changes afterwards, then uses again."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = [x, x * 2]
        first = torch.cat(parts, 1)
        parts.append(x * 3)  # after the first cat: its inputs must stay the two it was given
        return torch.cat(parts, 1) + first.sum()


def test_a_list_changed_after_the_call_is_recorded_as_it_was() -> None:
    t = trace_model(_ListChanged(), torch.ones(1, 2), flops=False)
    g = t.graph
    cats = [n for n in _ops(t) if n.name == "cat"]
    into = {c.id: [e for e in g.edges if e.dst == c.id] for c in cats}
    assert [len(into[c.id]) for c in cats] == [2, 3]
    assert [c.outputs[0].shape for c in cats] == [(1, 4), (1, 6)]
    assert dict(cats[0].args)["tensors"] == "[Tensor[1×2 float32], Tensor[1×2 float32]]"


class _ShapeChangedInPlace(torch.nn.Module):
    """An op's output whose shape changes in place later (unsqueeze_, .data =)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x + 1
        y.unsqueeze_(0)  # in place: y is now 1×1×3
        z = y * 2
        z.data = torch.zeros(5)  # a property setter: z's tensor is swapped
        return z + 1


def test_an_ops_output_keeps_the_shape_it_had_when_it_ran() -> None:
    t = trace_model(_ShapeChangedInPlace(), torch.ones(1, 3), flops=False)
    shapes = [(n.name, n.outputs[0].shape) for n in _ops(t)]
    assert shapes[:3] == [("add", (1, 3)), ("unsqueeze_", (1, 1, 3)), ("mul", (1, 1, 3))]
    assert shapes[-1] == ("add", (5,))


class _Big(torch.nn.Module):
    """Makes many 1 MB intermediates one after another and counts how many are still alive at each step."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[weakref.ref] = []
        self.alive: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(40):
            x = x + 1  # 1 MB each; the previous one is dropped here
            self.refs.append(weakref.ref(x))
            self.alive.append(sum(r() is not None for r in self.refs))
        return x.sum()


def test_the_queue_holds_a_bounded_number_of_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mode, "MAX_HELD", 4 << 20)
    model = _Big()
    t = trace_model(model, torch.zeros(1 << 18), flops=False)  # 1 MB of float32
    assert len([n for n in _ops(t) if n.name == "add"]) == 40
    assert max(model.alive) <= 6  # about 4 MB queued, then recorded and let go
    gc.collect()
    assert all(r() is None for r in model.refs[:-1])  # after the trace nothing of the tracer's holds them
