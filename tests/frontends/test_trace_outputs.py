"""A forward pass that returns no tensor gives a graph without an output node: the user is told (item 15)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn

from torchvista_dash import trace_model


class Returns(nn.Module):
    def __init__(self, what: str) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.what = what

    def forward(self, x: torch.Tensor) -> Any:
        y = self.fc(x)
        if self.what == "str":
            return "done"
        if self.what == "int":
            return int(y.shape[0])
        if self.what == "none":
            return None
        return y


class Generates(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> Iterator[torch.Tensor]:
        for _ in range(2):
            yield self.fc(x)


@pytest.mark.parametrize(
    ("model", "match"),
    [
        (Returns("str"), r"returned a str, which holds no tensor: the graph has no output node"),
        (Returns("int"), r"returned an int, which holds no tensor"),
        (Returns("none"), r"returned None: the graph has no output node"),
        (Generates(), r"returned a generator, whose body never ran.*list\(\.\.\.\)"),
    ],
)
def test_a_forward_returning_no_tensor_warns(model: nn.Module, match: str) -> None:
    with pytest.warns(UserWarning, match=match) as rec:
        t = trace_model(model, torch.rand(2, 3))
    assert t.error is None
    assert not [n for n in t.graph.nodes if n.kind == "output"]
    assert rec[0].filename == __file__  # the warning points at the caller's line
    if not isinstance(model, Generates):
        assert [n.name for n in t.graph.nodes if n.kind == "op"] == ["linear"]  # what ran is still drawn


def test_a_forward_returning_tensors_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = trace_model(Returns("tensor"), torch.rand(2, 3))
    assert [n.name for n in t.graph.nodes if n.kind == "output"] == ["output"]
