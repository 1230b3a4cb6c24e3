"""The data model on its own: JSON round trip, determinism, validation of foreign or corrupt files."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from torchvista_dash.model.graph import (
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
    root = ModuleCall(call_id_for("", 0), "", "Net", None, num_params=20, params=(), depth=0)
    fc = ModuleCall(
        call_id_for("fc", 0),
        "fc",
        "Linear",
        root.id,
        num_params=20,
        params=(ParamInfo("weight", (4, 4), "float32", True), ParamInfo("bias", (4,), "float32", True)),
        extra_repr="in_features=4, out_features=4, bias=True",
        depth=1,
    )
    nodes = (
        Node(node_id_for(0), "input", "x", None, outputs=(meta,)),
        Node(
            node_id_for(1),
            "op",
            "linear",
            fc.id,
            params=("fc.weight", "fc.bias"),
            source="model.py:3",
            outputs=(meta,),
        ),
        Node(node_id_for(2), "op", "relu", root.id, error="boom", outputs=()),
        Node(node_id_for(3), "output", "output", None),
    )
    edges = (
        Edge(nodes[0].id, nodes[1].id, "n:0/0", meta),
        Edge(nodes[1].id, nodes[2].id, "n:1/0", meta),
        Edge(nodes[1].id, nodes[3].id, "n:1/0", meta),
    )
    return Graph(
        nodes,
        edges,
        (root, fc),
        model_name="Net",
        error=ErrorInfo("RuntimeError", "boom", "Traceback...", node=nodes[2].id),
        versions=(("torch", "2.13.0"),),
    )


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


@pytest.mark.parametrize(
    "payload, message",
    [
        ("not json", "invalid JSON"),
        (json.dumps({"hello": 1}), "no 'schema'"),
        (json.dumps({"schema": "other/9"}), "unsupported trace schema"),
        (json.dumps({"schema": "torchvista_dash.model.graph/1", "nodes": [{"id": 1}]}), "corrupt"),
    ],
)
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


# ---- hostile or broken files (issue 10): each is a TraceFormatError naming the problem
# ----------------------
def _calls(data: dict) -> dict[str, dict]:
    return {c["id"]: c for c in data["module_calls"]}


@pytest.mark.parametrize("cycle", ["self", "pair", "tail"])
def test_parent_cycles_among_module_calls_are_rejected(cycle):
    data = small_graph().to_dict()
    calls = _calls(data)
    if cycle == "self":
        calls["mod:fc"]["parent"] = "mod:fc"
    elif cycle == "pair":  # root and fc contain each other: no top-level call at all
        calls["mod:(root)"]["parent"] = "mod:fc"
    else:  # a call hanging below a cycle it is not part of
        extra = dict(calls["mod:fc"], id="mod:fc.inner", qualname="fc.inner", parent="mod:fc", depth=2)
        data["module_calls"].append(extra)
        calls["mod:fc"]["parent"] = "mod:fc.inner"
    with pytest.raises(TraceFormatError, match="parent cycle"):
        Graph.from_json(json.dumps(data))


def test_a_cycle_in_a_graph_built_in_memory_is_caught_by_validate():
    g = small_graph()
    looped = Graph(
        g.nodes, g.edges, (g.module_calls[0], ModuleCall("mod:fc", "fc", "Linear", "mod:fc", depth=1))
    )
    with pytest.raises(TraceFormatError, match="parent cycle"):
        looped.validate()


@pytest.mark.parametrize("depth", [10**9, 0, 2])
def test_a_depth_that_disagrees_with_the_parent_chain_is_rejected(depth):
    data = small_graph().to_dict()
    _calls(data)["mod:fc"]["depth"] = depth
    with pytest.raises(
        TraceFormatError, match=f"says depth {depth}, but its parent chain puts it at depth 1"
    ):
        Graph.from_json(json.dumps(data))


def test_module_nesting_deeper_than_the_limit_is_rejected():
    from torchvista_dash.model.checks import MAX_CALL_DEPTH

    data = small_graph().to_dict()
    parent = "mod:fc"
    for i in range(MAX_CALL_DEPTH + 1):
        data["module_calls"].append(
            {
                **_calls(data)["mod:fc"],
                "id": f"mod:deep{i}",
                "qualname": f"deep{i}",
                "parent": parent,
                "depth": i + 2,
                "params": [],
            }
        )
        parent = f"mod:deep{i}"
    with pytest.raises(TraceFormatError, match=f"the limit is {MAX_CALL_DEPTH}"):
        Graph.from_json(json.dumps(data))


def _text_with(field_path: tuple, raw: str) -> str:
    """The small graph's JSON with the value at ``field_path`` replaced by raw JSON text ``raw``."""
    data = small_graph().to_dict()
    target = data
    for k in field_path[:-1]:
        target = target[k]
    target[field_path[-1]] = "@@RAW@@"
    return json.dumps(data).replace('"@@RAW@@"', raw)


@pytest.mark.parametrize(
    "field_path, raw, message",
    [
        (("versions",), "[]", "field 'versions' must be an object of strings"),
        (("versions",), '{"torch": 2}', "field 'versions' must be an object of strings"),
        (("module_calls", 1, "call_index"), "Infinity", "invalid JSON"),
        (("module_calls", 1, "call_index"), "NaN", "invalid JSON"),
        (("module_calls", 1, "num_params"), "1e400", "invalid JSON"),
        (("module_calls", 1, "num_params"), "1e300", "field 'num_params' must be an integer"),
        (("module_calls", 1, "depth"), "1.0", "field 'depth' must be an integer"),
        (("module_calls", 1, "depth"), "true", "field 'depth' must be an integer"),
        (("module_calls", 1, "depth"), '"1"', "field 'depth' must be an integer"),
        (("edges", 0, "meta", "nbytes"), "9" * 5000, "invalid JSON"),
        (("edges", 0, "meta", "nbytes"), "-1", "field 'nbytes' must be an integer"),
        (
            ("edges", 0, "meta", "shape"),
            "[1, 18446744073709551616]",
            "field 'shape' must be a list of integers",
        ),
        (("nodes", 1, "name"), '"\\ud800"', "invalid JSON"),
        (("nodes", 1, "name"), "null", "node 'n:1': field 'name' must be a string"),
        (("nodes", 1, "args"), '[["a"]]', "field 'args' must be a list of"),
        (
            ("nodes", 1, "outputs"),
            '[{"shape": [1]}]',
            "node 'n:1': field 'outputs': a tensor: no field 'dtype'",
        ),
        (("nodes", 1), "[]", "must be a JSON object"),
        (("module_calls", 1, "params"), '"weight"', "field 'params' must be a list"),
        (("error",), '"boom"', "field 'error' must be a JSON object"),
        (("nodes",), "[" * 100_000 + "]" * 100_000, "invalid JSON"),
    ],
)
def test_hostile_values_are_trace_format_errors_not_raw_exceptions(field_path, raw, message):
    with pytest.raises(TraceFormatError, match=message):
        Graph.from_json(_text_with(field_path, raw))


def test_a_lone_surrogate_in_text_input_is_a_format_error():
    text = small_graph().to_json().replace('"linear"', '"\ud800"')
    with pytest.raises(TraceFormatError, match="invalid JSON"):
        Graph.from_json(text)


def test_missing_fields_and_unknown_references_name_the_record():
    data = small_graph().to_dict()
    del data["nodes"][2]["kind"]
    with pytest.raises(TraceFormatError, match="node 'n:2': no field 'kind'"):
        Graph.from_dict(data)
    data = small_graph().to_dict()
    data["error"]["node"] = "n:77"
    with pytest.raises(TraceFormatError, match="the error names an unknown node 'n:77'"):
        Graph.from_dict(data)


def test_a_field_table_that_misses_a_field_fails_loudly():
    """A field added to a dataclass but not to its reader's table would be dropped on load: refused at
    import."""
    from torchvista_dash.model.checks import REQUIRED, read_str, record

    with pytest.raises(TypeError, match="field table of ErrorInfo does not match"):
        record(ErrorInfo, (("type", read_str, REQUIRED), ("message", read_str, REQUIRED)), "error")


# ---- size limit and content id (issue 10, item 8) ----------------------------------------------------------
def test_files_over_the_size_limit_are_refused_with_how_to_raise_it(tmp_path, monkeypatch):
    path = small_graph().save(tmp_path / "t.json")
    size = path.stat().st_size
    with pytest.raises(
        TraceFormatError, match=r"over the .* limit .* max_bytes=\d+ .* TVD_MAX_TRACE_BYTES=\d+"
    ):
        Graph.load(path, max_bytes=size - 1)
    assert Graph.load(path, max_bytes=size) == small_graph()
    assert Graph.load(path, max_bytes=10**15) == small_graph()  # a huge limit is not a huge read buffer
    monkeypatch.setenv("TVD_MAX_TRACE_BYTES", str(size - 1))
    with pytest.raises(TraceFormatError, match="over the"):
        Graph.load(path)
    with pytest.raises(TraceFormatError, match="over the"):
        Graph.from_json(path.read_bytes())
    assert Graph.load(path, max_bytes=size) == small_graph()  # the parameter wins over the environment
    monkeypatch.setenv("TVD_MAX_TRACE_BYTES", "lots")
    with pytest.raises(TraceFormatError, match="TVD_MAX_TRACE_BYTES must be a whole number of bytes"):
        Graph.load(path)
    with pytest.raises(TraceFormatError, match="positive number of bytes"):
        Graph.load(path, max_bytes=0)


def test_the_id_of_a_loaded_trace_is_the_hash_of_its_bytes_not_a_second_serialisation(tmp_path, monkeypatch):
    g = small_graph()
    traced_id = g.content_id
    path = small_graph().save(tmp_path / "t.json")
    assert hashlib.sha1(path.read_bytes()).hexdigest()[:16] == traced_id

    def no_serialising(self):
        raise AssertionError("content_id serialised the graph again")

    monkeypatch.setattr(Graph, "to_bytes", no_serialising)
    loaded = Graph.load(path)
    assert loaded.content_id == traced_id  # saved and loaded again: the same id
    other = json.loads(path.read_text())
    other["model_name"] = "Other"
    assert Graph.from_json(json.dumps(other)).content_id != traced_id


def test_a_lone_surrogate_in_a_graph_built_in_memory_still_saves_and_loads(tmp_path):
    g = small_graph()
    odd = Graph(g.nodes, g.edges, g.module_calls, model_name="bad\ud800name")
    assert len(odd.content_id) == 16
    assert Graph.load(odd.save(tmp_path / "odd.json")).model_name == "bad?name"


def test_a_file_that_grows_while_it_is_read_is_still_held_to_the_limit(tmp_path, monkeypatch):
    path = small_graph().save(tmp_path / "t.json")
    size = path.stat().st_size
    real_stat = type(path).stat

    def stale_stat(self, *args, **kwargs):  # the size seen before the file grew
        st = real_stat(self, *args, **kwargs)
        return os.stat_result((*st[:6], 10, *st[7:])) if self == path else st

    monkeypatch.setattr(type(path), "stat", stale_stat)
    with pytest.raises(TraceFormatError, match="over the"):
        Graph.load(path, max_bytes=size - 1)
    assert Graph.load(path, max_bytes=size) == small_graph()
