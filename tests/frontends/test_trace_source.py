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
    assert t.error is not None and t.error.__traceback__ is not None  # the live exception keeps every frame


def test_a_failing_trace_gives_the_same_json_whatever_the_tracer_has_learnt() -> None:
    """The first trace of an op measures its FLOPs under torch's FlopCounterMode, later ones do not: the
    recorded traceback must not depend on it (a failing model on the meta device gave two JSONs)."""
    from torchvista_dash.frontends.trace import cost

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
            cost._LEARNED.clear()  # as in a fresh process, then as after it learnt
            outs.append(trace_model(model, x).to_json())
            outs.append(trace_model(model, x).to_json())
    assert len(set(outs)) == 1
    tb = json.loads(outs[0])["error"]["traceback"]
    assert "forward" in tb and "flop_counter" not in tb
    assert tb.rstrip().splitlines()[-1].startswith("RuntimeError: Sizes of tensors must match")


class _LongForward(torch.nn.Module):
    """Ops at the start, in a loop and at the end of a long forward: the line of each must be its own."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2  # op: mul
        for _ in range(2):
            y = y + 1  # op: add (twice, one line)
        a = 1
        b = a + 1
        c = b + a
        d = c * b
        e = d - c
        f = e + d
        g = f * e
        h = g - f
        y = self.lin(y) * (h - g)  # ops: linear (in nn.Linear: this call's line), mul
        return torch.relu(y)  # op: relu


def test_op_lines_read_after_the_pass_are_the_lines_that_ran() -> None:
    """Lines are looked up from the instruction offset after the pass (frontends/trace/sites.py): each op
    names the line of the expression that called it, as ``frame.f_lineno`` would, in a loop and at the end
    too."""
    import inspect

    lines, first = inspect.getsourcelines(_LongForward.forward)

    def line_of(marker: str) -> int:
        return first + next(i for i, text in enumerate(lines) if marker in text)

    t = trace_model(_LongForward(), torch.ones(1, 4), flops=False)
    ops = [n for n in t.graph.nodes if n.kind == "op"]
    got = [(n.name, int(n.source.rsplit(":", 1)[1])) for n in ops]
    assert got == [
        ("mul", line_of("op: mul")),
        ("add", line_of("op: add")),
        ("add", line_of("op: add")),
        ("linear", line_of("ops: linear")),
        ("mul", line_of("ops: linear")),
        ("relu", line_of("op: relu")),
    ]
    assert all(n.source.rsplit(":", 1)[0].endswith("test_trace_source.py") for n in ops)
