"""Structured inputs/outputs (a Llama's cache and hidden states, a dict of tensors) are one box that opens
like a module; inputs sit on the first rank, outputs on the last. Real Hugging Face model, real dot, real
Chromium."""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch
from support_app import click_id, css_id, ids_drawn, start, wait_drawn, wait_ids, wait_settled

from torchvista_dash import layout, trace_model
from torchvista_dash.model.graph import Graph
from torchvista_dash.view import build as view
from torchvista_dash.view.iogroups import io_groups


def _llama() -> Graph:
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    model = LlamaModel(cfg).eval()
    ids = torch.randint(0, 128, (1, 8), generator=torch.Generator().manual_seed(0))
    return trace_model(model, (ids,), kwargs={"use_cache": True, "output_hidden_states": True}).graph


@pytest.fixture(scope="module")
def llama() -> Graph:
    return _llama()


class DictModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)

    def forward(
        self, batch: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        h = self.a(batch["x"]) + batch["bias"]
        return self.b(h), (h, h * 2)


def test_a_llamas_cache_and_hidden_states_are_one_box_each(llama: Graph) -> None:
    vg = view.build_view(llama, view.make_spec(llama, depth=1))
    top = {n.id: (n.label, n.sublabel) for n in vg.nodes if n.parent is None}
    assert top["io:output:cache"] == ("cache · 3 × (keys, values)", "1×2×8×16")
    assert top["io:output:hidden_states"] == ("hidden_states · 4 tensors", "1×8×64")
    names = {llama.node_by_id[i].name for i in top if i in llama.node_by_id}
    assert names == {"input_ids", "last_hidden_state"}  # a plain tensor stays its own box
    assert sum(1 for n in vg.nodes if n.kind == "output") == 1
    # opening the box shows its parts, inside a cluster headed like the box; closing it folds them back
    opened = view.toggle(llama, vg.spec, "io:output:cache")
    vg2 = view.build_view(llama, opened)
    assert [c.label for c in vg2.clusters if c.id == "io:output:cache"] == ["cache · 3 × (keys, values)"]
    parts = [n.label for n in vg2.nodes if n.parent == "io:output:cache"]
    assert parts == [f"cache.layers[{i}].{f}" for i in range(3) for f in ("keys", "values")]
    assert view.build_view(llama, view.toggle(llama, opened, "io:output:cache")) == vg
    # every op drawn (depth None, expand all) still draws each group as one box; search finds a part inside it
    for spec in (view.make_spec(llama, depth=None), view.expand_everything(llama)):
        every = view.build_view(llama, spec, node_budget=10_000)
        assert {"io:output:cache", "io:output:hidden_states"} <= {n.id for n in every.nodes}
        assert not {c.id for c in every.clusters} & set(io_groups(llama).groups)
    part = next(n.id for n in llama.nodes if n.name == "cache.layers[1].values")
    assert view.visible_id_of(llama, vg, part) == "io:output:cache"
    found = view.expand_to(llama, vg.spec, part)
    assert view.visible_id_of(llama, view.build_view(llama, found), part) == part


def test_dicts_and_tuples_of_tensors_group_by_value() -> None:
    model = DictModel().eval()
    g = trace_model(model, ({"x": torch.randn(2, 4), "bias": torch.randn(2, 4)},)).graph
    groups = io_groups(g).groups
    assert {k: v.label for k, v in groups.items()} == {
        "io:input:batch": "batch · 2 tensors",
        "io:output:output[1]": "output[1] · 2 tensors",
    }
    vg = view.build_view(g, view.make_spec(g, depth=1))
    assert "output[0]" in {n.label for n in vg.nodes if n.kind == "output"}  # the tuple's first item alone


@pytest.mark.parametrize("rankdir", ["TB", "LR"])
def test_inputs_on_the_first_rank_outputs_on_the_last(llama: Graph, rankdir: str, dot_binary: str) -> None:
    for spec in (
        view.make_spec(llama, depth=1),
        view.toggle(llama, view.make_spec(llama, depth=2), "io:output:cache"),
    ):
        vg = view.build_view(llama, spec)
        lay = layout.layout_view(vg, rankdir=rankdir)
        ins = [lay.nodes[n.id] for n in vg.nodes if n.kind == "input"]
        outs = [lay.nodes[n.id] for n in vg.nodes if n.kind == "output" or n.id.startswith("io:output")]
        others = [b for vid, b in lay.nodes.items() if b not in ins and b not in outs]
        assert ins and outs and others
        if rankdir == "TB":  # y grows upwards: inputs highest, outputs lowest
            assert min(b[1] for b in ins) > max(b[1] for b in others)
            assert max(b[3] for b in outs) < min(b[3] for b in others)
        else:
            assert max(b[0] for b in ins) < min(b[0] for b in others)
            assert min(b[2] for b in outs) > max(b[2] for b in others)


@pytest.mark.browser
def test_the_cache_box_opens_with_a_click(page: Any, llama: Graph) -> None:
    from torchvista_dash import Trace
    from torchvista_dash.app.server.server import make_app

    srv = start(make_app([Trace(llama)]))
    try:
        page.goto(srv.url)
        wait_drawn(page, "main")
        assert "io:output:cache" in ids_drawn(page, "main", "nodes:labels")
        click_id(page, "main", "io:output:cache")
        part = next(n.id for n in llama.nodes if n.name == "cache.layers[0].keys")
        wait_ids(page, "main", "clusters:headers", present=("io:output:cache",))
        wait_ids(page, "main", "nodes:labels", present=(part,), absent=("io:output:cache",))
        page.wait_for_function(
            "(s) => document.querySelector(s).innerText.includes('cache.layers[2].values')",
            arg=css_id("main", "details"),
        )
    finally:
        srv.stop()


@pytest.mark.browser
def test_expand_all_on_a_llama_with_its_kv_cache_keeps_the_cache_one_box(page: Any) -> None:
    """Default settings (the cache on): "Expand all" draws every op, and the cache stays one box."""
    from transformers import LlamaConfig, LlamaModel

    from torchvista_dash import Trace
    from torchvista_dash.app.server.server import make_app

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    assert cfg.use_cache
    ids = torch.randint(0, 128, (1, 8), generator=torch.Generator().manual_seed(0))
    g = trace_model(LlamaModel(cfg).eval(), (ids,)).graph
    (gid,) = [k for k, grp in io_groups(g).groups.items() if grp.kind == "output"]
    parts = io_groups(g).groups[gid].members
    assert len(parts) == 8  # 4 layers × (keys, values)
    srv = start(make_app([Trace(g)]))
    try:
        page.goto(srv.url)
        wait_drawn(page, "main")
        page.click(css_id("main", "expand_all"))
        ops = tuple(n.id for n in g.nodes if n.kind == "op")
        wait_ids(page, "main", "nodes:labels", present=(*ops, gid), absent=parts[:1])
        drawn = set(ids_drawn(page, "main", "nodes:labels"))
        assert not drawn & set(parts) and [i for i in drawn if i.startswith("io:output")] == [gid]
        page.wait_for_function(
            "(s) => document.querySelector(s).innerText.trim() === 'every op'",
            arg=css_id("main", "depth"),
            timeout=20_000,
        )
        page.click(css_id("main", "fit"))  # an every-op view starts at its first rank; the cache is last
        wait_settled(page, "main")
        click_id(page, "main", gid)  # the user opens it: its parts
        wait_ids(page, "main", "nodes:labels", present=parts, absent=(gid,))
    finally:
        srv.stop()


def _t5() -> Graph:
    from transformers import T5Config, T5Model

    torch.manual_seed(0)
    cfg = T5Config(num_layers=3, d_model=16, d_ff=32, num_heads=2, d_kv=8, vocab_size=64)
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(0))
    return trace_model(T5Model(cfg).eval(), kwargs={"input_ids": ids, "decoder_input_ids": ids}).graph


@pytest.mark.browser
def test_a_t5s_two_caches_are_one_box_and_its_first_view_shows_its_labels(page: Any) -> None:
    """T5 with default settings returned 14 output boxes and opened with every label hidden."""
    from support_app import graph_dom_id
    from support_picture import drawn_labels

    from torchvista_dash import Trace
    from torchvista_dash.app.server.server import make_app

    g = _t5()
    vg = view.build_view(g, view.make_spec(g, depth=1))
    outs = {n.id: n.label for n in vg.nodes if n.kind == "output" or n.id.startswith("io:output")}
    assert sorted(outs.values()) == [
        "cache · 2 × 3 × (keys, values)",
        "encoder_last_hidden_state",
        "last_hidden_state",
    ]
    srv = start(make_app([Trace(g)]))
    try:
        page.goto(srv.url)
        wait_drawn(page, "main")
        drawn = drawn_labels(page, graph_dom_id("main"))["labels"]
        texts = {re.sub(r"^[⊕⊖]\s*", "", lab["text"]) for lab in drawn}
        wanted = {
            "encoder: T5Stack",
            "decoder: T5Stack",
            "last_hidden_state",
            "cache · 2 × 3 × (keys, values)",
        }
        assert wanted <= texts, sorted(texts)
    finally:
        srv.stop()
