"""Views on hand-built graphs: visible counts checked by hand, folding counts, toggling, budgets, errors."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support_graphs import failed_graph, nested_graph, parallel_graph, stack_graph, twice_graph

from torchvista_dash.model.graph import Graph
from torchvista_dash.view import build as view
from torchvista_dash.view.repeats import index_of


def ids(vg):
    return [n.id for n in vg.nodes]


def by_id(vg):
    return {n.id: n for n in vg.nodes}


def test_default_view_folds_the_stack_and_keeps_edge_shapes():
    g = stack_graph(12)
    vg = view.build_view(g, view.make_spec(g))
    assert ids(vg) == ["n:0", "mod:embed", "fold:mod:layers.0", "mod:norm", g.nodes[-1].id]
    fold = by_id(vg)["fold:mod:layers.0"]
    assert (fold.kind, fold.label, fold.count) == ("folded", "Block ×12", 12)
    assert fold.members == tuple(f"mod:layers.{i}" for i in range(12))
    assert [(e.src, e.dst) for e in vg.edges] == [
        ("n:0", "mod:embed"),
        ("mod:embed", "fold:mod:layers.0"),
        ("fold:mod:layers.0", "mod:norm"),
        ("mod:norm", g.nodes[-1].id),
    ]
    assert all(e.label == "2×8" and e.meta.shape == (2, 8) and e.meta.dtype == "float32" for e in vg.edges)
    assert [c.id for c in vg.clusters] == ["mod:(root)"]
    assert vg.clusters[0].label == "Stack"
    assert by_id(vg)["mod:embed"].label == "embed: Linear"


def test_every_op_view_counts():
    g = stack_graph(12)
    vg = view.build_view(g, view.make_spec(g, depth=None, fold_repeats=False))
    # x, embed linear, 12 × (linear, gelu, add), layer_norm, output
    assert len(vg.nodes) == 1 + 1 + 36 + 1 + 1
    # x→embed, 12 × (in→linear, in→add, linear→gelu, gelu→add), add→norm, norm→output
    assert len(vg.edges) == 1 + 48 + 1 + 1
    assert len(vg.clusters) == 1 + 1 + 12 * 2 + 1
    with_params = view.build_view(g, view.make_spec(g, depth=None, fold_repeats=False, show_params=True))
    assert len(with_params.nodes) == len(vg.nodes) + 26  # weight and bias of 13 Linears
    assert len(with_params.edges) == len(vg.edges) + 26
    assert {n.kind for n in with_params.nodes} == {"input", "op", "parameter", "output"}


def test_every_op_view_with_folding_hides_the_members():
    g = stack_graph(12)
    vg = view.build_view(g, view.make_spec(g, depth=None))
    assert [n.kind for n in vg.nodes] == ["input", "op", "folded", "op", "output"]
    assert [c.id for c in vg.clusters] == ["mod:(root)", "mod:embed", "mod:norm"]


def test_parallel_edges_of_one_tensor_merge():
    g = stack_graph(3)
    vg = view.build_view(g, view.make_spec(g, fold_repeats=False))
    # the embed output enters layers.0 twice (fc and the residual add): one visible edge
    assert [(e.src, e.dst) for e in vg.edges].count(("mod:embed", "mod:layers.0")) == 1
    assert len(vg.edges) == 6


def test_several_tensors_between_two_boxes_are_one_edge_that_counts_them():
    import torch
    from torch import nn

    from torchvista_dash import trace_model

    class Pair(nn.Module):
        def __init__(self, second_width: int) -> None:
            super().__init__()
            self.second_width = second_width

        def forward(self, x):
            return x + 1, x[:, : self.second_width] * 2

    class Joined(nn.Module):
        def __init__(self, second_width: int) -> None:
            super().__init__()
            self.pair = Pair(second_width)

        def forward(self, x):
            a, b = self.pair(x)
            return torch.cat([a, b], 1)

    for width, label in ((3, "4×3 ×2"), (1, "2 tensors")):
        vg = trace_model(Joined(width), torch.rand(4, 3)).view()
        (edge,) = [e for e in vg.edges if e.src == "mod:pair"]
        assert (edge.label, edge.count) == (label, 2)


def test_a_folded_stacks_per_layer_caches_are_one_edge_into_the_cache_box():
    # 80 layers' keys and values were 160 edges side by side: a 12,600-point-wide default view of Llama-3-70B
    import torch
    from transformers import GPT2Config, GPT2Model

    from torchvista_dash import trace_model

    cfg = GPT2Config(n_layer=4, n_embd=32, n_head=2, vocab_size=64, n_positions=16)
    vg = trace_model(GPT2Model(cfg).eval(), torch.randint(0, 64, (1, 5))).view()
    into_cache = [e for e in vg.edges if e.dst.startswith("io:output:")]
    fold = next(n.id for n in vg.nodes if n.kind == "folded")
    (cache,) = [e for e in into_cache if e.src == fold]
    assert cache.count == 8 and cache.label == "1×2×5×16 ×8"


@pytest.mark.parametrize(
    "odd, expected",
    [
        (5, [("fold:mod:layers.0", 5), ("mod:layers.5", 1), ("fold:mod:layers.6", 6)]),
        (0, [("mod:layers.0", 1), ("fold:mod:layers.1", 11)]),
        (11, [("fold:mod:layers.0", 11), ("mod:layers.11", 1)]),
    ],
)
def test_an_odd_layer_breaks_the_run_and_counts_stay_right(odd, expected):
    g = stack_graph(12, odd_layer=odd)
    vg = view.build_view(g, view.make_spec(g))
    blocks = [(n.id, n.count) for n in vg.nodes if n.kind in ("folded", "module") and "layers" in n.id]
    assert blocks == expected
    assert sum(c for _, c in blocks) == 12


def test_parallel_identical_heads_are_not_folded():
    g = parallel_graph()
    vg = view.build_view(g, view.make_spec(g))
    assert [n.kind for n in vg.nodes].count("module") == 3
    assert index_of(g).runs == {}


def test_nested_repeats_fold_at_each_level():
    g = nested_graph(outer=3, inner=4)
    vg = view.build_view(g, view.make_spec(g))
    assert [n.label for n in vg.nodes] == ["x", "Stage ×3", "output"]
    spec = view.toggle(g, view.make_spec(g), "fold:mod:stages.0")
    vg = view.build_view(g, spec)
    assert [n.id for n in vg.nodes if n.kind == "module"] == ["mod:stages.0", "mod:stages.1", "mod:stages.2"]
    spec = view.toggle(g, spec, "mod:stages.1")
    inner = by_id(view.build_view(g, spec))["fold:mod:stages.1.blocks.0"]
    assert (inner.label, inner.count, inner.parent) == ("Block ×4", 4, "mod:stages.1")


def test_naming_a_deep_call_opens_its_ancestors_and_pins_it_in_its_runs():
    g = nested_graph()  # 3 stages of 4 blocks: "Stage ×3" at first
    spec = view.make_spec(g, expanded={"stages.1.blocks.2"})
    assert spec.pinned == {"mod:stages.1", "mod:stages.1.blocks.2"} and not spec.unfolded
    vg = view.build_view(g, spec)
    assert [c.id for c in vg.clusters] == ["mod:(root)", "mod:stages.1", "mod:stages.1.blocks.2"]
    boxes = [(n.id, n.count) for n in vg.nodes if n.kind in ("module", "folded")]
    # the named block is drawn open; the rest of each run stays folded around it (pieces of one are boxes)
    assert boxes == [
        ("mod:stages.0", 1),
        ("fold:mod:stages.1.blocks.0", 2),
        ("mod:stages.1.blocks.2.fc", 1),
        ("mod:stages.1.blocks.3", 1),
        ("mod:stages.2", 1),
    ]
    assert by_id(vg)["fold:mod:stages.1.blocks.0"].members == (
        "mod:stages.1.blocks.0",
        "mod:stages.1.blocks.1",
    )
    chain = [(e.src, e.dst) for e in vg.edges if "n:" not in e.src + e.dst]
    assert ("mod:stages.0", "fold:mod:stages.1.blocks.0") in chain and (
        "mod:stages.1.blocks.3",
        "mod:stages.2",
    ) in chain


def test_a_pinned_block_splits_its_fold_and_each_piece_unfolds_on_its_own():
    g = stack_graph(12)
    spec = view.expand_to(g, view.make_spec(g), "mod:layers.7")
    vg = view.build_view(g, spec)
    assert [(n.id, n.count) for n in vg.nodes if n.kind in ("module", "folded")][1:] == [
        ("fold:mod:layers.0", 7),
        ("mod:layers.7", 1),
        ("fold:mod:layers.8", 4),
        ("mod:norm", 1),
    ]
    assert view.visible_id_of(g, vg, "mod:layers.7") == "mod:layers.7"
    assert view.visible_id_of(g, vg, "mod:layers.9") == "fold:mod:layers.8"
    after = view.toggle(g, spec, "fold:mod:layers.8")  # unfold the piece after the pinned block only
    vg2 = view.build_view(g, after)
    assert "fold:mod:layers.0" in by_id(vg2) and {"mod:layers.8", "mod:layers.11"} <= set(ids(vg2))
    assert view.toggle(g, after, "fold:mod:layers.8") == spec
    # opening the pinned block, then closing its parent, forgets the pin: one fold again
    opened = view.toggle(g, spec, "mod:layers.7")
    assert "mod:layers.7" in [c.id for c in view.build_view(g, opened).clusters]
    closed = view.toggle(g, opened, "mod:(root)")
    assert not closed.pinned and not closed.unfolded
    with pytest.raises(ValueError, match="does not have"):
        view.build_view(g, replace(spec, pinned=frozenset({"mod:norm"})))  # not in any run


def test_expand_then_collapse_round_trips():
    g = stack_graph(4)
    start = view.make_spec(g, fold_repeats=False)
    opened = view.toggle(g, start, "mod:layers.2")
    assert "mod:layers.2" in opened.expanded
    assert "mod:layers.2" in [c.id for c in view.build_view(g, opened).clusters]
    back = view.toggle(g, opened, "mod:layers.2")
    assert back == start
    assert view.build_view(g, back) == view.build_view(g, start)
    unfolded = view.toggle(g, view.make_spec(g), "fold:mod:layers.0")
    assert view.toggle(g, unfolded, "fold:mod:layers.0") == view.make_spec(g)


def test_collapsing_a_cluster_collapses_everything_inside():
    g = nested_graph()
    spec = view.make_spec(g, depth=None, fold_repeats=False)
    spec = view.toggle(g, spec, "mod:stages.0")
    assert not any(c.startswith("mod:stages.0") for c in spec.expanded)
    assert "mod:stages.1.blocks.0" in spec.expanded
    vg = view.build_view(g, view.toggle(g, spec, "mod:(root)"))
    assert [n.kind for n in vg.nodes] == ["input", "module", "output"] and vg.clusters == ()
    assert view.toggle(g, spec, "n:0") == spec  # clicking an op changes nothing


def test_depth_zero_is_one_box_and_builtins_stay_closed():
    g = stack_graph(2)
    vg = view.build_view(g, view.make_spec(g, depth=0))
    assert [n.kind for n in vg.nodes] == ["input", "module", "output"]
    assert vg.nodes[1].label == "Stack"
    deep = view.make_spec(g, depth=5, fold_repeats=False)
    assert "mod:embed" not in deep.expanded and "mod:layers.0.fc" not in deep.expanded
    assert "mod:layers.0" in deep.expanded


def test_failed_op_marks_its_boxes():
    g = failed_graph()
    vg = view.build_view(g, view.make_spec(g))
    failed = [n.id for n in vg.nodes if n.failed]
    assert failed == ["mod:layers.1"]
    full = view.build_view(g, view.make_spec(g, depth=None))
    assert [n.id for n in full.nodes if n.failed] == [g.error.node]
    assert [c.id for c in full.clusters if c.failed] == ["mod:(root)", "mod:layers.1"]
    closed = view.build_view(g, view.make_spec(g, depth=0))
    assert [n.failed for n in closed.nodes] == [False, True]


def test_module_called_twice_gives_two_boxes():
    g = twice_graph()
    vg = view.build_view(g, view.make_spec(g))
    assert [n.label for n in vg.nodes] == ["x", "proj: Linear", "relu", "proj: Linear #1", "output"]
    both = view.build_view(g, view.make_spec(g, expanded={"proj"}))
    assert [c.id for c in both.clusters] == ["mod:(root)", "mod:proj", "mod:proj#1"]
    one = view.build_view(g, view.make_spec(g, expanded={"mod:proj#1"}))
    assert [c.id for c in one.clusters] == ["mod:(root)", "mod:proj#1"]


def test_unknown_names_get_suggestions():
    g = stack_graph(3)
    with pytest.raises(ValueError, match=r"unknown module 'layer\.1'.*did you mean 'layers\.1'"):
        view.make_spec(g, expanded={"layer.1"})
    with pytest.raises(ValueError, match="unknown folded group"):
        view.make_spec(g, unfolded={"mod:embed"})
    with pytest.raises(TypeError, match="collection"):
        view.make_spec(g, expanded="layers.1")
    with pytest.raises(ValueError, match="depth"):
        view.make_spec(g, depth=-1)
    with pytest.raises(ValueError, match="not a node"):
        view.toggle(g, view.make_spec(g), "mod:nope")
    foreign = view.make_spec(nested_graph(), expanded={"stages.1"})
    with pytest.raises(ValueError, match="another trace"):
        view.build_view(g, foreign)


def test_node_budget_collapses_deeper_calls_and_says_so():
    g = stack_graph(12)
    spec = view.make_spec(g, depth=None, fold_repeats=False, show_params=True)
    full = view.build_view(g, spec, node_budget=10_000)
    assert len(full.nodes) == 66 and full.notes == ()
    small = view.build_view(g, spec, node_budget=20)
    assert len(small.nodes) <= 20
    assert small.notes and "auto-collapsed" in small.notes[0] and "66" in small.notes[0]
    assert small.spec.expanded < spec.expanded
    again = view.build_view(g, small.spec, node_budget=20)  # the spec actually drawn reproduces it
    assert again.nodes == small.nodes and again.notes == ()


def test_over_budget_with_nothing_open_is_drawn_whole_and_says_so():
    g = stack_graph(12)
    closed = view.make_spec(g, depth=0, fold_repeats=False)  # nothing open: nothing the budget could close
    assert closed.expanded == frozenset()
    vg = view.build_view(g, closed, node_budget=1)
    assert len(vg.nodes) == len(view.build_view(g, closed).nodes) > 1 and vg.spec == closed
    assert len(vg.notes) == 1 and "over the budget of 1" in vg.notes[0] and "drawn in full" in vg.notes[0]


def test_expand_to_and_visible_id_of():
    g = nested_graph()
    spec = view.make_spec(g)
    target = next(n.id for n in g.nodes if n.parent == "mod:stages.2.blocks.1" and n.name == "gelu")
    vg = view.build_view(g, spec)
    assert view.visible_id_of(g, vg, target) == "fold:mod:stages.0"
    assert view.visible_id_of(g, vg, "mod:stages.2.blocks.1") == "fold:mod:stages.0"
    spec2 = view.expand_to(g, spec, target)
    vg2 = view.build_view(g, spec2)
    assert target in ids(vg2)
    assert view.visible_id_of(g, vg2, target) == target
    assert view.visible_id_of(g, vg2, "mod:stages.2.blocks.1") == "mod:stages.2.blocks.1"  # a cluster now
    weight = next(n.id for n in g.nodes if n.kind == "parameter")
    vg3 = view.build_view(g, view.expand_to(g, spec, weight))
    assert weight in ids(vg3)
    call_only = view.build_view(g, view.expand_to(g, spec, "mod:stages.1.blocks.3"))
    assert by_id(call_only)["mod:stages.1.blocks.3"].kind == "module"


def test_views_are_deterministic_and_survive_json():
    g = nested_graph()
    spec = view.make_spec(g, expanded={"stages.0"})
    g2 = Graph.from_json(g.to_json())
    assert view.build_view(g, spec) == view.build_view(g2, spec)
    assert view.make_spec(g2, expanded={"stages.0"}) == spec


def test_a_rebuilt_view_keys_the_same_cache_entry_and_pickles_without_its_hash():
    import pickle

    g = stack_graph(12)
    spec = view.make_spec(g, depth=None, fold_repeats=False)
    a, b = view.build_view(g, spec), view.build_view(g, spec)
    assert a is not b and a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    other = view.build_view(g, view.make_spec(g))
    assert other != a
    # a string's hash differs between processes, so the hash computed once here must not travel in a pickle
    state = pickle.loads(pickle.dumps(a)).__dict__
    assert "_hash" not in state and pickle.loads(pickle.dumps(a)) == a


def test_expand_everything_unfolds_runs_and_depth_of_names_each_view() -> None:
    g = stack_graph()
    every = view.expand_everything(g)
    assert not [n for n in view.build_view(g, every).nodes if n.kind in ("folded", "module")]
    assert view.depth_of(g, every) == -1
    max_depth = max(c.depth for c in g.module_calls)
    for d in range(max_depth + 1):
        assert view.depth_of(g, view.make_spec(g, depth=d)) == d
    one = view.make_spec(g, depth=1)
    box = next(n.id for n in view.build_view(g, one).nodes if n.kind in ("module", "folded"))
    assert view.depth_of(g, view.toggle(g, one, box)) == view.CUSTOM


def test_depth_opens_built_in_containers_but_not_built_in_layers():
    # a torchvision-style ResNet's layer1..layer4 are nn.Sequential: depth 2 must open them
    import torch
    from torch import nn

    from torchvista_dash import trace_model

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer1 = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(self.layer1(x))

    t = trace_model(Net(), torch.rand(1, 4))
    assert "mod:layer1" not in t.view(depth=1).spec.expanded
    two = t.view(depth=2)
    assert "mod:layer1" in two.spec.expanded and "mod:fc" not in two.spec.expanded
    assert {n.id for n in two.nodes} >= {"mod:layer1.0", "mod:layer1.1", "mod:fc"}
    assert "mod:layer1.0" not in t.view(depth=3).spec.expanded  # its Linear stays a box
