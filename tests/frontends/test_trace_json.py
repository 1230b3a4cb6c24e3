"""save/load_trace round-trip exactly, deterministically, and refuse foreign or corrupt files clearly."""

from __future__ import annotations

import json
import os
import pickle

import pytest
import torch
from support_models import REAL_MODELS, build_synthetic

from torchvista_dash import TraceFormatError, load_trace, trace_model
from torchvista_dash.model.graph import SCHEMA


@pytest.mark.parametrize("name", ["struct_io", "bn_train", "direct_param"])
def test_round_trip_synthetic(name: str, tmp_path) -> None:
    model, args, kwargs = build_synthetic(name)
    t = trace_model(model, args, kwargs=kwargs)
    path = t.save(tmp_path / f"{name}.json")
    t2 = load_trace(path)
    assert t2.graph == t.graph
    assert t2.graph.to_json() == path.read_text(encoding="utf-8")
    assert json.loads(path.read_text())["schema"] == SCHEMA


def test_gpt2_same_input_gives_byte_identical_json(tmp_path) -> None:
    model, args, kwargs = REAL_MODELS["gpt2"]()
    a = trace_model(model, args, kwargs=kwargs).save(tmp_path / "a.json").read_bytes()
    model2, args2, kwargs2 = REAL_MODELS["gpt2"]()  # a fresh model object, same config and input
    b = trace_model(model2, args2, kwargs=kwargs2).save(tmp_path / "b.json").read_bytes()
    assert a == b
    assert load_trace(tmp_path / "a.json").graph == load_trace(tmp_path / "b.json").graph
    assert b"0x" not in a


def test_different_input_shape_gives_different_json() -> None:
    model, args, kwargs = REAL_MODELS["gpt2"]()
    a = trace_model(model, args, kwargs=kwargs).to_json()
    b = trace_model(model, (args[0][:, :5],), kwargs=kwargs).to_json()
    assert a != b
    assert json.loads(b)["nodes"][0]["outputs"][0]["shape"] == [1, 5]


def test_foreign_and_corrupt_files_give_clear_errors(tmp_path) -> None:
    t = trace_model(build_synthetic("mlp")[0], torch.randn(2, 8))
    good = json.loads(t.to_json())

    (tmp_path / "foreign.json").write_text(json.dumps({"nodes": []}))
    with pytest.raises(TraceFormatError, match="no 'schema' field"):
        load_trace(tmp_path / "foreign.json")

    (tmp_path / "garbage.json").write_bytes(b"\x80\x04not json at all")
    with pytest.raises(TraceFormatError, match="invalid JSON"):
        load_trace(tmp_path / "garbage.json")

    (tmp_path / "pickle.json").write_bytes(pickle.dumps({"schema": SCHEMA}))
    with pytest.raises(TraceFormatError):
        load_trace(tmp_path / "pickle.json")

    future = dict(good, schema="torchvista_dash.model.graph/99")
    (tmp_path / "future.json").write_text(json.dumps(future))
    with pytest.raises(TraceFormatError, match="unsupported trace schema"):
        load_trace(tmp_path / "future.json")

    broken = json.loads(t.to_json())
    broken["edges"][0]["dst"] = "n:999"
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    with pytest.raises(TraceFormatError, match="unknown node"):
        load_trace(tmp_path / "broken.json")

    missing = json.loads(t.to_json())
    del missing["nodes"][0]["kind"]
    (tmp_path / "missing.json").write_text(json.dumps(missing))
    with pytest.raises(TraceFormatError, match="corrupt"):
        load_trace(tmp_path / "missing.json")

    with pytest.raises(FileNotFoundError):
        load_trace(tmp_path / "nope.json")


@pytest.mark.parametrize("mutation", ["cycle", "depth", "versions", "infinity", "nesting", "size"])
def test_serve_refuses_a_hostile_file_in_one_line(mutation: str, tmp_path) -> None:
    """What a user sees: `serve bad.json` exits with one `error:` line naming the problem, no traceback."""
    import subprocess
    import sys

    t = trace_model(build_synthetic("mlp")[0], torch.randn(2, 8))
    data = json.loads(t.to_json())
    text = None
    if mutation == "cycle":
        data["module_calls"][0]["parent"] = data["module_calls"][-1]["id"]
    elif mutation == "depth":
        data["module_calls"][-1]["depth"] = 10**9
    elif mutation == "versions":
        data["versions"] = []
    elif mutation == "size":
        pass  # a valid trace over the limit set in the environment
    elif mutation == "infinity":
        text = json.dumps(data).replace('"nbytes": 64', '"nbytes": Infinity', 1)
    else:
        text = json.dumps(data).replace('"nodes": [', '"nodes": [' + "[" * 100_000 + "]" * 100_000 + ",", 1)
    path = tmp_path / "bad.json"
    path.write_text(text if text is not None else json.dumps(data))
    env = dict(os.environ, TVD_MAX_TRACE_BYTES="1000") if mutation == "size" else None
    proc = subprocess.run(
        [sys.executable, "-m", "torchvista_dash", "serve", str(path), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1, proc.stderr
    assert {
        "cycle": "parent cycle",
        "depth": "says depth 1000000000",
        "versions": "field 'versions'",
        "infinity": "invalid JSON",
        "nesting": "invalid JSON",
        "size": "over the 1,000 bytes limit",
    }[mutation] in proc.stderr
    assert proc.stderr.count("bad.json") == 1, proc.stderr  # the file is named once


@pytest.mark.parametrize("name", ["gpt", "broken", "resnet"])
def test_recorded_nodes_and_edges_are_what_their_constructors_make(name: str) -> None:
    """The recorder fills Node/Edge objects directly (and builds ops after the pass, sharing tuples): each is
    the object its dataclass constructor makes from the same fields, so equality, hashing and JSON agree."""
    import dataclasses

    from torchvista_dash.demos import build_demo
    from torchvista_dash.model.graph import Edge, Node

    model, args = build_demo(name)
    with pytest.warns(UserWarning) if name == "broken" else _no_warning():
        t = trace_model(model, args)
    assert t.graph.nodes and t.graph.edges
    for n in t.graph.nodes:
        assert type(n) is Node and set(vars(n)) == {f.name for f in dataclasses.fields(Node)}
        assert Node(**vars(n)) == n and hash(Node(**vars(n))) == hash(n)
    for e in t.graph.edges:
        assert type(e) is Edge and set(vars(e)) == {f.name for f in dataclasses.fields(Edge)}
        assert Edge(**vars(e)) == e
    assert any(n.kind == "parameter" for n in t.graph.nodes)
    if name == "broken":
        assert t.graph.error is not None and t.graph.node_by_id[t.graph.error.node].error


def _no_warning():
    import contextlib
    import warnings

    @contextlib.contextmanager
    def cm():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            yield

    return cm()
