"""trace_model(values=True): a summary of every tensor's values, recorded in the same pass, saved exactly."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest
import torch
from support_models import FailingNet, InPlaceNet, build_gpt2

from torchvista_dash import load_trace, trace_model
from torchvista_dash.model.graph import SCHEMA, SCHEMA_VALUES, Graph
from torchvista_dash.model.values import describe


class Mixed(torch.nn.Module):
    """Float, integer and bool outputs; an in-place ReLU that writes into the linear's output."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 6)
        self.act = torch.nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.act(self.fc(x))
        return y, ids * 3, ids > 2


def _op(t, name):  # type: ignore[no-untyped-def]
    return next(n for n in t.graph.nodes if n.kind == "op" and n.name == name)


def test_each_tensor_gets_its_summary_as_it_was_when_made() -> None:
    torch.manual_seed(0)
    model, x, ids = Mixed().eval(), torch.randn(5, 4), torch.arange(7)
    t = trace_model(model, (x, ids), values=True)
    assert "values" in t.graph.measured
    with torch.no_grad():
        pre = model.fc(x)  # the linear's output before the in-place ReLU wrote into it
    s = _op(t, "linear").values[0]
    assert s.min is not None and s.min < 0  # negative: read before the ReLU wrote into it
    assert s.min == pytest.approx(pre.min().item(), rel=1e-6)
    assert s.max == pytest.approx(pre.max().item(), rel=1e-6)
    assert s.mean == pytest.approx(pre.mean().item(), rel=1e-5, abs=1e-7)
    assert s.std == pytest.approx(pre.std(correction=0).item(), rel=1e-5)
    assert (s.nan, s.inf, s.zeros, s.absmax) == (0, 0, 0.0, pytest.approx(pre.abs().max().item(), rel=1e-6))
    assert len(s.sample) == 8 and s.sample[0] == pytest.approx(pre.flatten()[0].item(), rel=1e-6)
    relu = _op(t, "relu").values[0]
    assert relu.min == 0.0 and relu.zeros == pytest.approx((pre <= 0).float().mean().item(), abs=1e-6)
    inputs = {n.name: n.values[0] for n in t.graph.nodes if n.kind == "input"}
    assert inputs["x"].max == pytest.approx(x.max().item(), rel=1e-6)
    # integers and bools: the subset that makes sense (no mean, std, NaN or Inf)
    mul, gt = _op(t, "mul").values[0], _op(t, "gt").values[0]
    assert (mul.min, mul.max, mul.mean, mul.std, mul.nan) == (0.0, 18.0, None, None, None)
    assert mul.zeros == pytest.approx(1 / 7, rel=1e-6) and gt.zeros == pytest.approx(3 / 7, rel=1e-6)
    # the model's outputs carry their producers' summaries; parameters have none (they are weights)
    outs = [n for n in t.graph.nodes if n.kind == "output"]
    assert outs[0].values == _op(t, "relu").values
    assert all(not n.values for n in t.graph.nodes if n.kind == "parameter")


def test_nan_and_inf_are_counted_and_the_rest_summarised() -> None:
    class Div(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x / torch.tensor([0.0, 1.0, 1.0, 1.0])

    t = trace_model(Div(), torch.tensor([[0.0, 2.0, -3.0, 4.0], [1.0, 1.0, 1.0, 1.0]]), values=True)
    s = _op(t, "div").values[0]
    assert (s.nan, s.inf, s.nonfinite) == (1, 1, 2)
    assert (s.min, s.max) == (-3.0, 4.0) and s.mean == pytest.approx(1.0)  # of 2, -3, 4, 1, 1, 1
    assert "NaN 1, Inf 1" in describe(s)


def test_a_value_trace_saves_and_loads_exactly_and_a_plain_one_is_unchanged(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model, args, kw = build_gpt2()
    plain = trace_model(model, args, kw)
    valued = trace_model(model, args, kw, values=True)
    assert (
        trace_model(model, args, kw, values=True).graph.to_bytes() == valued.graph.to_bytes()
    )  # deterministic
    loaded = load_trace(valued.save(tmp_path / "v.json"))
    assert loaded.graph == valued.graph and loaded.graph.to_bytes() == valued.graph.to_bytes()
    assert json.loads(valued.to_json())["schema"] == SCHEMA_VALUES
    # without values: schema 1 and no value field anywhere; the value trace is the plain one plus summaries
    assert json.loads(plain.to_json())["schema"] == SCHEMA and '"values"' not in plain.to_json()
    stripped = dataclasses.replace(
        valued.graph,
        nodes=tuple(dataclasses.replace(n, values=()) for n in valued.graph.nodes),
        measured=tuple(m for m in valued.graph.measured if m != "values"),
    )
    assert stripped.to_bytes() == plain.graph.to_bytes()
    assert Graph.from_json(plain.to_json()) == plain.graph


def test_a_corrupt_summary_is_a_clear_format_error() -> None:
    t = trace_model(InPlaceNet(), torch.randn(2, 8), values=True)
    d = json.loads(t.to_json())
    op = next(n for n in d["nodes"] if n.get("values"))
    op["values"][0]["zeros"] = 3.5
    from torchvista_dash.model.checks import TraceFormatError

    with pytest.raises(TraceFormatError, match="zeros.*fraction from 0 to 1"):
        Graph.from_json(json.dumps(d))


def test_a_model_that_raises_keeps_the_values_up_to_the_failure() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = trace_model(FailingNet(), torch.randn(2, 8), values=True)
    assert t.failed
    ops = [n for n in t.graph.nodes if n.kind == "op" and n.error is None]
    assert ops and all(n.values and n.values[0] is not None for n in ops)


def test_meta_tensors_say_they_hold_no_values() -> None:
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())
    t = trace_model(model, torch.randn(2, 4, device="meta"), values=True)
    op = _op(t, "gelu")
    assert op.values == (None,)
    fig = t.figure(depth=None)
    hover = next(tr for tr in fig.data if tr.name == "nodes:labels").hovertext
    assert any("no values: a meta-device tensor holds none" in h for h in hover)


def test_hover_shows_each_box_values() -> None:
    torch.manual_seed(0)
    t = trace_model(Mixed().eval(), (torch.randn(5, 4), torch.arange(7)), values=True)
    labels = next(tr for tr in t.figure(depth=0).data if tr.name == "nodes:labels")
    root_hover = labels.hovertext[list(labels.customdata).index("mod:(root)")]
    assert "values [0]: min 0, max" in root_hover and "zeros" in root_hover


def test_rearranging_ops_reuse_their_inputs_summary_and_never_a_stale_one() -> None:
    class Views(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            y = x * 2
            v = y.view(-1)
            t = y.transpose(0, 1)
            y.relu_()  # written in place through y: v and t now hold the new values
            w = v.view(3, -1)
            return t.contiguous(), w, torch.nn.functional.dropout(w, 0.5, training=False)

    torch.manual_seed(0)
    x = torch.randn(3, 4)
    t = trace_model(Views(), x, values=True)
    with torch.no_grad():
        r = (x * 2).relu()
    expect = [r.t().contiguous(), r.view(3, -1), r.view(3, -1)]
    outs = [n for n in t.graph.nodes if n.kind == "output"]
    for node, want in zip(outs, expect, strict=True):
        s = node.values[0]
        assert s.min == pytest.approx(want.min().item(), abs=1e-6) and s.min >= 0  # after the relu_
        assert s.mean == pytest.approx(want.mean().item(), rel=1e-5)
        assert s.zeros == pytest.approx((want == 0).float().mean().item(), abs=1e-6)
        assert s.sample == pytest.approx(tuple(want.flatten()[[0, 2, 3, 5, 6, 8, 9, 11]].tolist()), rel=1e-6)
