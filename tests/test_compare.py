"""compare(a, b): the issue's reference cases (GPT-2 2 vs 3 layers, BERT with another intermediate_size, a
model against itself), a mixed diff drawn as one graph, and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from torchvista_dash import compare, load_trace, trace_model
from torchvista_dash.compare import GRAFT

ROOT = Path(__file__).resolve().parent.parent


def _quiet(model: nn.Module, args: Any, kwargs: dict[str, Any] | None = None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return trace_model(model, args, kwargs=kwargs)


def _gpt2(n_layer: int) -> Any:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    cfg = GPT2Config(
        n_layer=n_layer, n_embd=64, n_head=2, vocab_size=128, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    return _quiet(GPT2Model(cfg).eval(), (torch.randint(0, 128, (1, 8)),), {"use_cache": False})


def _bert(intermediate: int) -> Any:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=128,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=intermediate,
        max_position_embeddings=64,
    )
    return _quiet(
        BertModel(cfg).eval(),
        (torch.randint(0, 128, (1, 8)),),
        {"attention_mask": torch.ones(1, 8, dtype=torch.long)},
    )


@pytest.fixture(scope="module")
def gpt2_pair() -> tuple[Any, Any]:
    return _gpt2(2), _gpt2(3)


def test_gpt2_two_vs_three_layers_adds_one_block_and_changes_nothing_else(gpt2_pair: tuple[Any, Any]) -> None:
    a, b = gpt2_pair
    s = compare(a, b).summary()
    assert s["added"][0] == "h.2" and all(q == "h.2" or q.startswith("h.2.") for q in s["added"])
    assert "h.2.mlp.c_fc" in s["added"]
    assert s["removed"] == [] and s["changed"] == []
    deltas = {d["qualname"]: d for d in s["deltas"]}
    block = a.stats()[[r["qualname"] for r in a.stats()].index("h.1")]
    assert deltas[""]["params_delta"] == block["params"]
    assert deltas[""]["flops_delta"] == block["flops"]
    assert deltas["h.2"]["params_a"] is None and deltas["h.2"]["params_b"] == block["params"]
    assert set(deltas) == {"", *s["added"]}  # nothing that was there before differs
    # the other way round: the block is removed
    back = compare(b, a).summary()
    assert back["removed"] == s["added"] and back["added"] == [] and back["changed"] == []


def test_bert_with_another_intermediate_size_changes_the_mlp_linears() -> None:
    d = compare(_bert(128), _bert(256))
    s = d.summary()
    assert s["added"] == [] and s["removed"] == []
    for i in (0, 1):
        for q in (f"encoder.layer.{i}.intermediate.dense", f"encoder.layer.{i}.output.dense"):
            assert q in s["changed"]
        why = " ".join(d.reasons[f"encoder.layer.{i}.intermediate.dense"])
        assert "out_features=128" in why and "out_features=256" in why and "weight 128×64" in why
        assert "1×8×256" in " ".join(d.reasons[f"encoder.layer.{i}.output.dense"])
    # nothing outside the feed-forward parts (BertIntermediate, BertOutput and what is inside them) changed
    assert all(q.split(".")[3] in ("intermediate", "output") for q in s["changed"])


def test_a_model_against_itself_is_an_empty_diff(gpt2_pair: tuple[Any, Any], tmp_path: Path) -> None:
    a, _ = gpt2_pair
    again = load_trace(a.save(tmp_path / "a.json"))
    d = compare(a, again)
    assert d.empty
    assert d.summary() == {"added": [], "removed": [], "changed": [], "deltas": []}


class _Old(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.gate = nn.Sequential(nn.Linear(4, 4), nn.Sigmoid())
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        return self.head(h * self.gate(h))


class _New(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.head = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.fc(x)))


def test_added_and_removed_at_once_draw_one_graph_with_the_removed_grafted() -> None:
    a, b = _quiet(_Old(), torch.randn(1, 4)), _quiet(_New(), torch.randn(1, 4))
    d = compare(a, b)
    s = d.summary()
    assert s["added"] == ["norm"]
    assert s["removed"] == ["gate", "gate.0", "gate.1"]
    assert s["changed"] == ["", "head"]  # the root: another class, and its output is 1×3 now
    assert d.reasons[""][0] == "class _Old → _New" and "outputs 1×2 → 1×3" in d.reasons[""]
    assert any("out_features=2" in r for r in d.reasons["head"])
    g = d.trace.graph
    g.validate()
    grafted = [c for c in g.module_calls if c.id.startswith(GRAFT)]
    assert [c.qualname for c in grafted] == ["gate", "gate.0", "gate.1"]
    assert grafted[0].parent == "mod:(root)" and grafted[1].parent == grafted[0].id
    assert {d.status_of_call(c) for c in grafted} == {"removed"}
    # the grafted ops keep their edges inside the removed module
    inside = {n.id for n in g.nodes if n.id.startswith(GRAFT)}
    assert any(e.src in inside and e.dst in inside for e in g.edges)
    assert d.trace.id != b.id and d.trace.id.startswith("diff-")
    # every view of it opens and closes like any other
    v = d.trace.view(depth=None)
    assert {n.id for n in v.nodes} & inside


def test_compare_rejects_what_is_not_a_trace() -> None:
    with pytest.raises(TypeError, match="two Traces"):
        compare("a.json", "b.json")  # type: ignore[arg-type]


def test_cli_diff_exports_and_summarises(gpt2_pair: tuple[Any, Any], tmp_path: Path) -> None:
    a, b = gpt2_pair
    pa, pb = a.save(tmp_path / "a.json"), b.save(tmp_path / "b.json")
    out = tmp_path / "diff.svg"
    proc = subprocess.run(
        [sys.executable, "-m", "torchvista_dash", "diff", str(pa), str(pb), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "12 added" in proc.stdout and "0 removed" in proc.stdout
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") or "<svg" in svg
    # at depth 1 the blocks fold into one box that compares by count, outlined as changed
    assert "×2 → ×3: +1" in svg and "#e8590c" in svg
    js = tmp_path / "diff.json"
    proc = subprocess.run(
        [sys.executable, "-m", "torchvista_dash", "diff", str(pa), str(pb), "-o", str(js)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(js.read_text())["added"][0] == "h.2"


def test_cli_diff_names_a_missing_file(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchvista_dash",
            "diff",
            str(tmp_path / "nope.json"),
            str(tmp_path / "nope2.json"),
            "-o",
            str(tmp_path / "x.svg"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode != 0
    assert "nope.json" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_diff_serves_the_diff(gpt2_pair: tuple[Any, Any], tmp_path: Path) -> None:
    import os

    import requests
    from support_app import served_url

    a, b = gpt2_pair
    pa, pb = a.save(tmp_path / "a.json"), b.save(tmp_path / "b.json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchvista_dash", "diff", str(pa), str(pb), "--port", "0"],
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(proc)
        layout = requests.get(url + "_dash-layout", headers={"Referer": url}, timeout=60).text
        assert "diff: +12 added" in layout and "×2 → ×3: +1" in layout
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class _Stack(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.body = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(n)])
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def test_a_diffs_first_view_opens_down_to_what_changed() -> None:
    # the added block sits two levels down: a depth-1 view would show one unmarked "body" box
    d = compare(_quiet(_Stack(2), torch.randn(1, 4)), _quiet(_Stack(3), torch.randn(1, 4)))
    assert d.summary()["added"] == ["body.2", "body.2.0", "body.2.1"]
    vg = d.trace.view()
    assert "mod:body" in vg.spec.expanded and "mod:body.2" not in vg.spec.expanded  # added: marked whole
    run = next(n for n in vg.nodes if "mod:body.2" in (n.members or (n.id,)))
    paint = d.trace.paint(vg)
    assert paint is not None and paint.sublabels[run.id] == "×2 → ×3: +1"
    assert d.trace.view(expanded=()).spec.expanded == d.trace.view(depth=1, expanded=()).spec.expanded
    assert "mod:body" not in d.trace.view(expanded=()).spec.expanded  # asked for nothing open: nothing


def test_a_collapsed_box_whose_inside_changed_is_marked_changed() -> None:
    d = compare(_bert(128), _bert(256))
    vg = d.trace.view()
    assert "mod:encoder" in vg.spec.expanded  # opened down to the folded layers, not into them
    run = next(n for n in vg.nodes if n.kind == "folded")
    paint = d.trace.paint(vg)
    assert paint is not None and paint.boxes[run.id].line == "#e8590c"
    assert "changed inside: 10 modules differ" in paint.hover[run.id]
    closed = d.trace.view(expanded=())  # the whole encoder collapsed: marked as well
    enc = next(n for n in closed.nodes if n.id == "mod:encoder")
    assert d.trace.paint(closed).boxes[enc.id].line == "#e8590c"


def test_a_diffs_figure_carries_the_key_of_its_colours() -> None:
    # in the app and in notebooks, not only in static exports: green, ghosted and orange need a key
    d = compare(_quiet(_Stack(2), torch.randn(1, 4)), _quiet(_Stack(3), torch.randn(1, 4)))
    (key,) = [a for a in d.figure().layout.annotations if a.name == "key"]
    assert [part.split("</span> ")[1] for part in key.text.split("   ")] == ["added", "removed", "changed"]
    assert "#2f9e44" in key.text and "#e8590c" in key.text
    plain = _quiet(_Stack(2), torch.randn(1, 4)).figure(color_by="flops")
    assert not [a for a in plain.layout.annotations if a.name == "key"]  # colour by cost: its colour bar
