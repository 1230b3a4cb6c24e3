"""Source lines point at the model's code, even when that code lives inside this package (the demos)."""

from __future__ import annotations

import json
import warnings

import torch

from torchvista_dash import demos, trace_model


def test_demo_ops_name_the_demo_line_not_the_caller():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = demos.demo_trace("broken")
    failing = [n for n in t.graph.nodes if n.error]
    assert len(failing) == 1 and failing[0].name == "cat"
    path, line = failing[0].source.rsplit(":", 1)
    assert path.endswith("demos.py") and int(line) > 0
    with open(demos.__file__, encoding="utf-8") as f:
        assert "cat" in f.read().splitlines()[int(line) - 1]


def test_failed_trace_traceback_starts_at_the_model_not_the_tracer():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = demos.demo_trace("broken")
    tb = t.graph.error.traceback
    assert tb.startswith("Traceback (most recent call last):")
    assert "torchvista_dash/trace/" not in tb and "demos.py" in tb
    assert tb.rstrip().splitlines()[-1].startswith("RuntimeError: Sizes of tensors must match")
    assert t.error is not None and t.error.__traceback__ is not None   # the live exception keeps every frame


def test_a_failing_trace_gives_the_same_json_whatever_the_tracer_has_learnt() -> None:
    """The first trace of an op measures its FLOPs under torch's FlopCounterMode, later ones do not: the
    recorded traceback must not depend on it (a failing model on the meta device gave two JSONs)."""
    from torchvista_dash.trace import cost

    class Bad(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([self.lin(x), x[:, :2]], 0)

    with torch.device("meta"):
        model = Bad()
    x = torch.zeros(2, 4, device="meta")
    outs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            cost._LEARNED.clear()       # as in a fresh process, then as after it learnt
            outs.append(trace_model(model, x).to_json())
            outs.append(trace_model(model, x).to_json())
    assert len(set(outs)) == 1
    tb = json.loads(outs[0])["error"]["traceback"]
    assert "forward" in tb and "flop_counter" not in tb
    assert tb.rstrip().splitlines()[-1].startswith("RuntimeError: Sizes of tensors must match")
