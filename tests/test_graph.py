"""The data model on its own: JSON round trip, determinism, validation of foreign or corrupt files."""

from __future__ import annotations

import json

import pytest

from torchvista_dash.graph import (
    Edge,
    ErrorInfo,
    Graph,
    ModuleCall,
    Node,
    ParamInfo,
    TensorMeta,
    TraceFormatError,
    call_id_for,
    node_id_for,
)


def small_graph() -> Graph:
    meta = TensorMeta((1, 4), "float32", "cpu", 16)
    root = ModuleCall(call_id_for("", 0), "", "Net", None, num_params=20,
                      params=(), depth=0)
    fc = ModuleCall(call_id_for("fc", 0), "fc", "Linear", root.id, num_params=20,
                    params=(ParamInfo("weight", (4, 4), "float32", True), ParamInfo("bias", (4,), "float32", True)),
                    extra_repr="in_features=4, out_features=4, bias=True", depth=1)
    nodes = (
        Node(node_id_for(0), "input", "x", None, outputs=(meta,)),
        Node(node_id_for(1), "op", "linear", fc.id, params=("fc.weight", "fc.bias"), source="model.py:3",
             outputs=(meta,)),
        Node(node_id_for(2), "op", "relu", root.id, error="boom", outputs=()),
        Node(node_id_for(3), "output", "output", None),
    )
    edges = (
        Edge(nodes[0].id, nodes[1].id, "n:0/0", meta),
        Edge(nodes[1].id, nodes[2].id, "n:1/0", meta),
        Edge(nodes[1].id, nodes[3].id, "n:1/0", meta),
    )
    return Graph(nodes, edges, (root, fc), model_name="Net",
                 error=ErrorInfo("RuntimeError", "boom", "Traceback...", node=nodes[2].id),
                 versions=(("torch", "2.13.0"),))


def test_json_round_trip_is_exact_and_deterministic(tmp_path):
    g = small_graph()
    text = g.to_json()
    g2 = Graph.from_json(text)
    assert g2 == g
    assert g2.to_json() == text
    path = g.save(tmp_path / "t.json")
    assert Graph.load(path) == g


def test_lookups_and_counts():
    g = small_graph()
    assert g.root is not None and g.root.cls == "Net"
    assert g.children_calls[g.root.id] == ["mod:fc"]
    assert g.ancestors("mod:fc") == ["mod:fc", "mod:(root)"]
    assert g.op_count == 2
    assert g.total_params == 20


@pytest.mark.parametrize("payload, message", [
    ("not json", "invalid JSON"),
    (json.dumps({"hello": 1}), "no 'schema'"),
    (json.dumps({"schema": "other/9"}), "unsupported trace schema"),
    (json.dumps({"schema": "torchvista_dash.graph/1", "nodes": [{"id": 1}]}), "corrupt"),
])
def test_foreign_or_corrupt_files_give_clear_errors(payload, message):
    with pytest.raises(TraceFormatError, match=message):
        Graph.from_json(payload)


def test_dangling_edge_is_rejected():
    data = small_graph().to_dict()
    data["edges"][0]["dst"] = "n:99"
    with pytest.raises(TraceFormatError, match="unknown node"):
        Graph.from_dict(data)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no trace file"):
        Graph.load(tmp_path / "nope.json")
