"""The gallery's built-in models: all trace, deterministically; the failing one fails where it should."""

from __future__ import annotations

import pytest

from torchvista_dash import trace_model
from torchvista_dash.demos import DEMOS, build_demo, demo_trace


def test_gallery_has_the_six_kinds_of_model() -> None:
    assert {"mlp", "resnet", "unet", "transformer", "gpt", "broken"} <= set(DEMOS)
    assert all(d.title and d.description for d in DEMOS.values())


@pytest.mark.parametrize("name", [n for n in DEMOS if n != "broken"])
def test_each_working_demo_traces_completely_and_deterministically(name: str) -> None:
    trace = demo_trace(name)
    assert not trace.failed
    assert trace.graph.op_count > 0 and trace.graph.total_params > 0
    assert any(n.kind == "output" for n in trace.graph.nodes)
    jsons = [trace_model(*build_demo(name)).graph.to_json() for _ in range(2)]  # fresh builds, same bytes
    assert jsons[0] == jsons[1]


def test_distinctive_structure() -> None:
    gpt = demo_trace("gpt").graph
    assert [c.cls for c in gpt.module_calls if c.depth == 1].count("GPTBlock") == 4  # repeats to fold
    unet = demo_trace("unet").graph
    assert any(n.name == "cat" for n in unet.nodes)  # skip connections
    tr = demo_trace("transformer").graph
    assert {"TransformerEncoder", "TransformerDecoder"} <= {c.cls for c in tr.module_calls}
    res = demo_trace("resnet").graph
    assert sum(c.cls == "BasicBlock" for c in res.module_calls) == 4
    # an identity shortcut is drawn on the residual path, like the downsampling Sequential one
    from torchvista_dash.view import build as view

    vg = view.build_view(res, view.make_spec(res, expanded={"layer2.0", "layer2.1"}))
    labels = {n.id: n.label for n in vg.nodes}
    assert labels["mod:layer2.0.shortcut"] == "shortcut: Sequential"
    assert labels["mod:layer2.1.shortcut"] == "shortcut: Identity"


def test_broken_demo_fails_mid_forward_inside_nested_modules() -> None:
    trace = demo_trace("broken")
    graph = trace.graph
    assert trace.failed and graph.error.type == "RuntimeError"
    assert "Sizes of tensors must match" in graph.error.message
    failing = graph.node_by_id[graph.error.node]
    assert failing.name == "cat" and failing.error
    assert graph.call_by_id[failing.parent].qualname == "fusion"
    assert {graph.call_by_id[c].qualname for c in graph.ancestors(failing.parent)} == {"fusion", ""}
    assert all(graph.call_by_id[c].failed for c in graph.ancestors(failing.parent))
    assert "head" not in graph.calls_by_qualname  # never reached
    assert any(n.name == "linear" for n in graph.nodes)  # the ops before the failure are kept


def test_unknown_demo_names_the_choices() -> None:
    with pytest.raises(KeyError, match="choose one of: mlp"):
        build_demo("nope")
