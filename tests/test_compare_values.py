"""compare(t1, t2) of two value traces: per op how far apart the runs are, and where they first diverge."""

from __future__ import annotations

import copy

import pytest
import torch
from support_models import NaNTower, build_gpt2

from torchvista_dash import compare, trace_model
from torchvista_dash.model.valuediff import StructureMismatch


def _tower(layers: int = 6) -> NaNTower:
    torch.manual_seed(0)
    return NaNTower(layers=layers, broken=99).eval()  # no broken layer: every value finite


def test_a_model_against_itself_does_not_diverge() -> None:
    model, x = _tower(), torch.randn(2, 16)
    d = compare(trace_model(model, x, values=True), trace_model(model, x, values=True))
    assert d.first_divergence() is None
    assert d.values.ops and all(o.abs == 0.0 and o.rel == 0.0 for o in d.values.ops.values())


def test_bfloat16_against_float32_diverges_at_the_first_op_that_rounds() -> None:
    model, args, kw = build_gpt2()
    low = copy.deepcopy(model).to(torch.bfloat16)
    t32, t16 = trace_model(model, args, kw, values=True), trace_model(low, args, kw, values=True)
    first = compare(t32, t16).first_divergence()
    rounding = next(
        n for n in t16.graph.nodes if n.kind == "op" and any(m.dtype == "bfloat16" for m in n.outputs)
    )
    assert first is not None and first.node == rounding.id
    assert first.rel > 1e-4  # bfloat16 keeps 8 bits of mantissa
    # a tolerance looser than bfloat16's rounding sees no divergence there
    loose = compare(t32, t16).first_divergence(rtol=0.5, atol=0.5)
    assert loose is None or loose.node != rounding.id


def test_a_weight_perturbed_in_layer_3_diverges_there() -> None:
    model, x = _tower(), torch.randn(2, 16)
    changed = copy.deepcopy(model)
    with torch.no_grad():
        changed.layers[3].fc.weight[0, 0] += 0.5
    d = compare(trace_model(model, x, values=True), trace_model(changed, x, values=True))
    first = d.first_divergence()
    assert first is not None and (first.name, first.qualname) == ("linear", "layers.3.fc")
    modules = d.values.per_module()
    assert modules["layers.2"] == (0.0, 0.0) and modules["layers.3"][0] > 0 and modules["head"][0] > 0
    fig = d.values_figure()
    bar = next(tr for tr in fig.data if tr.name == "colorbar").marker.colorbar
    assert bar.title.text == "relative difference"
    labels = next(tr for tr in fig.data if tr.name == "nodes:labels")
    assert first.node in list(labels.customdata)  # its module opened so the op is drawn
    hover = labels.hovertext[list(labels.customdata).index(first.node)]
    assert f"relative difference:</b> {first.rel:.4g}" in hover


def test_different_architectures_name_the_first_module_where_they_differ() -> None:
    x = torch.randn(2, 16)
    with pytest.raises(StructureMismatch, match=r"module 'layers\.4' \(DivLayer\) is only in the second"):
        compare(
            trace_model(_tower(4), x, values=True), trace_model(_tower(5), x, values=True)
        ).first_divergence()
    other = _tower()
    other.layers[2].fc = torch.nn.Sequential(torch.nn.Linear(16, 16))
    with pytest.raises(
        StructureMismatch, match=r"at module 'layers\.2\.fc': Linear in the first, Sequential in the second"
    ):
        compare(trace_model(_tower(), x, values=True), trace_model(other, x, values=True)).first_divergence()
    with pytest.raises(ValueError, match="values=True"):
        compare(trace_model(_tower(), x), trace_model(_tower(), x)).first_divergence()
