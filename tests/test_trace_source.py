"""Source lines point at the model's code, even when that code lives inside this package (the demos)."""

from __future__ import annotations

import warnings

from torchvista_dash import demos


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
