"""Big views laid out by module with the real ``dot``: an eager mixture-of-experts block's loop cut into one
piece per expert path (``layout.composed.groups``), long stacks wrapped into columns (``wrap``), and the
drawings' quality on reduced versions of the models the bench measures at full size."""

from __future__ import annotations

import pytest
from test_layout_compose import check_composed, decoder_graph, every_op
from test_layout_quality import crossings

from torchvista_dash import layout, trace_model
from torchvista_dash.layout.composed import groups, pieces
from torchvista_dash.model.graph import Graph
from torchvista_dash.view import build as view

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def qwen3_moe(n_layers: int, n_experts: int, eager: bool = True, top_k: int = 4, tokens: int = 16) -> Graph:
    """A Qwen3-MoE config (random weights, CPU); ``eager``: every routed expert's ops recorded (the loop of
    transformers' eager experts), else the library's default fused experts."""
    cfg = transformers.Qwen3MoeConfig(
        hidden_size=32,
        intermediate_size=64,
        moe_intermediate_size=16,
        num_hidden_layers=n_layers,
        num_experts=n_experts,
        num_experts_per_tok=top_k,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        vocab_size=100,
        attn_implementation="eager",
        experts_implementation="eager" if eager else None,
    )
    torch.manual_seed(0)
    model = transformers.Qwen3MoeModel(cfg).eval()
    return trace_model(model, (torch.randint(0, 100, (1, tokens)),)).graph


def test_a_tandem_repeat_is_found_with_its_period_and_the_phase_that_cuts_least():
    body = [5, 6, 7, 8]
    tokens = [1, 2] + body * 10 + [3]
    assert groups.find_periods(tokens) == [(2, 4, 10)]
    # the loop's body runs 6, 7, 8 and the next 5 (each 5 closes an iteration): inside it 6→7, 7→8, 7→5 and
    # 8→5; from one iteration into the next only 5→6. Cut before each 6, one edge per boundary; cut before
    # each 5 (phase 0), two.
    pairs = []
    for r in range(9):
        at = 2 + 4 * r  # the r-th 5
        six, seven, eight, five = at + 1, at + 2, at + 3, at + 4
        pairs += [(six, seven), (seven, eight), (seven, five), (eight, five), (five, five + 1)]
    assert groups.best_phase(2, 4, 10, pairs) == 1
    found = groups.group_children([f"c{i}" for i in range(len(tokens))] * 2, lambda c: c, [])
    assert found == []  # no repeat among distinct names, however many children


def test_an_eager_expert_loop_is_laid_out_one_expert_path_at_a_time(dot_binary):
    g = qwen3_moe(2, 32)
    vg = every_op(g)
    pl = pieces.plan(vg)
    experts = "mod:layers.0.mlp.experts"
    inside = sum(1 for n in vg.nodes if n.parent == experts)
    assert inside > 150
    assert pl.groups, "the expert loop was not cut into groups"
    own = pl.pieces[experts]
    # the module's own piece: a few ops and one box per expert path, each path a piece of its own
    assert len(own.children) < inside / 5
    paths = [c for c in own.children if c in pl.groups]
    bodies = {tuple(vg_label(vg, m) for m in pl.pieces[p].children) for p in paths}
    assert len(paths) >= 16 and len(bodies) == 1, bodies
    layout.clear_cache()
    lay = layout.layout_view(vg, method="composed")
    check_composed(vg, lay)  # groups are no clusters of the Layout: every cluster is a module call's
    again = (layout.clear_cache(), layout.layout_view(vg, method="composed"))[1]
    assert again == lay  # deterministic


def vg_label(vg, vid: str) -> str:
    for n in vg.nodes:
        if n.id == vid:
            return n.label
    return next(c.label.split(" #")[0] for c in vg.clusters if c.id == vid)


def test_a_long_stack_wraps_into_columns_read_in_order(dot_binary):
    g = decoder_graph(64)
    vg = every_op(g)
    layout.clear_cache()
    lay = layout.layout_view(vg, method="composed")
    check_composed(vg, lay)
    boxes = [lay.clusters[f"mod:layers.{i}"] for i in range(64)]
    lefts = sorted({round(b[0]) for b in boxes})
    assert len(lefts) >= 3, "the stack stayed one column"
    assert 0.3 < lay.width / lay.height < 3.0, (lay.width, lay.height)
    # columns left to right, each read top to bottom, each column's layers one above the other
    column = [lefts.index(round(b[0])) for b in boxes]
    assert column == sorted(column)
    for a, b, ca, cb in zip(boxes, boxes[1:], column, column[1:], strict=False):
        if ca == cb:
            assert b[3] <= a[1] + 1.0, (a, b)
        else:
            assert b[3] >= a[1], (a, b)  # the next column starts higher than the last one ended
    # measured 1,022 (one column of 12 layers: 120-ish): each column has a trunk of its own for the position
    # tensor, and the jump from one column's foot to the next one's head crosses them
    assert crossings(lay) <= 1_100


def test_a_short_stack_stays_one_column(dot_binary):
    vg = every_op(decoder_graph(12))
    lay = layout.layout_view(vg, method="composed")
    assert len({round(lay.clusters[f"mod:layers.{i}"][0]) for i in range(12)}) == 1


def test_an_opened_cache_output_stacks_its_tensors_in_rows(dot_binary):
    """Each layer's key and value leave for the model's cache output: opened, its tensors (one box each,
    each fed by a port of its own) stand in a block of rows, not in one row as wide as all of them."""
    cfg = transformers.LlamaConfig(
        num_hidden_layers=16,
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=2,
        num_key_value_heads=1,
        vocab_size=100,
    )
    torch.manual_seed(0)
    model = transformers.LlamaModel(cfg).eval()
    g = trace_model(model, (torch.zeros(1, 6, dtype=torch.long),), kwargs={"use_cache": True}).graph
    spec = view.make_spec(g, depth=None, fold_repeats=False)
    vg = view.build_view(g, view.toggle(g, spec, "io:output:cache"))
    lay = layout.layout_view(vg, method="composed")
    check_composed(vg, lay)
    outs = [lay.nodes[n.id] for n in vg.nodes if n.parent == "io:output:cache"]
    assert len(outs) == 32
    rows = {round((b[1] + b[3]) / 2) for b in outs}
    assert len(rows) >= 4, rows
    box = lay.clusters["io:output:cache"]
    assert box[2] - box[0] < sum(b[2] - b[0] for b in outs) / 2
