"""Views and layouts of real traces: hand-checked small models, GPT-2 / BERT / T5 (small configs, random
weights)."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from test_layout import check_geometry  # noqa: E402

from torchvista_dash import layout, trace_model  # noqa: E402
from torchvista_dash.model.graph import Graph  # noqa: E402
from torchvista_dash.view import build as view  # noqa: E402
from torchvista_dash.view.iogroups import io_groups  # noqa: E402
from torchvista_dash.view.types import VisibleGraph  # noqa: E402


class Residual(torch.nn.Module):
    """x → fc → relu → (+ x) → out: 2 params, 3 ops."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x


class Block(torch.nn.Module):
    def __init__(self, d: int, act: str = "gelu") -> None:
        super().__init__()
        self.fc = torch.nn.Linear(d, d)
        self.act = torch.nn.GELU() if act == "gelu" else torch.nn.ReLU()

    def forward(self, x):
        return x + self.act(self.fc(x))


class Stack(torch.nn.Module):
    """``n`` blocks in a ModuleList; ``odd`` swaps one block's activation (a config that differs)."""

    def __init__(self, n: int = 12, odd: int | None = None, d: int = 4) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(Block(d, "relu" if i == odd else "gelu") for i in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Stages(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stages = torch.nn.ModuleList(Stack(4) for _ in range(3))

    def forward(self, x):
        for s in self.stages:
            x = s(x)
        return x


def _graph(model, *args, **kwargs) -> Graph:
    torch.manual_seed(0)
    return trace_model(model.eval(), args, kwargs=kwargs or None).graph


@pytest.fixture(scope="module")
def gpt2_12() -> Graph:
    cfg = transformers.GPT2Config(n_layer=12, n_embd=16, n_head=2, vocab_size=64, n_positions=16)
    torch.manual_seed(0)
    return _graph(transformers.GPT2Model(cfg), torch.randint(0, 64, (1, 6)))


@pytest.fixture(scope="module")
def bert() -> Graph:
    cfg = transformers.BertConfig(
        num_hidden_layers=3,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=32,
        vocab_size=64,
        max_position_embeddings=16,
    )
    torch.manual_seed(0)
    return _graph(transformers.BertModel(cfg), torch.randint(0, 64, (1, 6)))


@pytest.fixture(scope="module")
def t5() -> Graph:
    cfg = transformers.T5Config(num_layers=3, d_model=16, d_ff=32, num_heads=2, d_kv=8, vocab_size=64)
    torch.manual_seed(0)
    ids = torch.randint(0, 64, (1, 6))
    return _graph(transformers.T5Model(cfg), input_ids=ids, decoder_input_ids=ids)


def _labels(vg: VisibleGraph) -> list[str]:
    return [n.label for n in vg.nodes]


def _connected(vg: VisibleGraph) -> None:
    touched = {e.src for e in vg.edges} | {e.dst for e in vg.edges}
    assert [n.id for n in vg.nodes if n.id not in touched] == []
    outputs = [n.id for n in vg.nodes if n.kind == "output"]
    assert outputs and all(any(e.dst == o for e in vg.edges) for o in outputs)


def test_sequential_counts_by_hand():
    g = _graph(
        torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)), torch.zeros(3, 4)
    )
    vg = view.build_view(g, view.make_spec(g))  # the root opens even though Sequential is a torch.nn class
    assert [n.kind for n in vg.nodes] == ["input", "module", "module", "module", "output"]
    assert _labels(vg)[1:4] == ["0: Linear", "1: ReLU", "2: Linear"]
    assert [e.label for e in vg.edges] == ["3×4", "3×8", "3×8", "3×2"]
    full = view.build_view(g, view.make_spec(g, depth=None))
    assert [n.label for n in full.nodes if n.kind == "op"] == ["linear", "relu", "linear"]
    assert (len(full.nodes), len(full.edges), len(full.clusters)) == (5, 4, 4)
    with_params = view.build_view(g, view.make_spec(g, depth=None, show_params=True))
    assert (len(with_params.nodes), len(with_params.edges)) == (9, 8)
    check_geometry(full, layout.layout_view(full))


def test_residual_counts_by_hand():
    g = _graph(Residual(), torch.zeros(2, 4))
    vg = view.build_view(g, view.make_spec(g))
    # x, fc box, relu, add, output; x feeds fc and add
    assert [n.kind for n in vg.nodes] == ["input", "module", "op", "op", "output"]
    assert len(vg.edges) == 5
    full = view.build_view(g, view.make_spec(g, expanded={"fc"}))
    assert [c.id for c in full.clusters] == ["mod:(root)", "mod:fc"]
    assert [n.label for n in full.nodes if n.parent == "mod:fc"] == ["linear"]


def test_gpt2_twelve_blocks_fold_to_x12(gpt2_12):
    g = gpt2_12
    vg = view.build_view(g, view.make_spec(g))
    folded = [n for n in vg.nodes if n.kind == "folded"]
    assert [(n.label, n.count) for n in folded] == [("GPT2Block ×12", 12)]
    assert folded[0].members == tuple(f"mod:h.{i}" for i in range(12))
    _connected(vg)
    check_geometry(vg, layout.layout_view(vg))
    unfolded = view.build_view(g, view.toggle(g, vg.spec, folded[0].id))
    assert [n.id for n in unfolded.nodes if n.kind == "module" and n.id.startswith("mod:h.")] == [
        f"mod:h.{i}" for i in range(12)
    ]


def test_gpt2_one_block_expanded(gpt2_12):
    g = gpt2_12
    vg = view.build_view(g, view.make_spec(g, expanded={"h.3"}))
    assert [c.id for c in vg.clusters] == ["mod:(root)", "mod:h.3"]
    inside = [n.id for n in vg.nodes if n.parent == "mod:h.3"]
    assert {"mod:h.3.ln_1", "mod:h.3.attn", "mod:h.3.ln_2", "mod:h.3.mlp"} <= set(inside)
    assert [(n.label, n.count) for n in vg.nodes if n.kind == "folded"] == [
        ("GPT2Block ×3", 3),
        ("GPT2Block ×8", 8),
    ]
    _connected(vg)
    check_geometry(vg, layout.layout_view(vg))


def test_fully_expanded_views_show_every_op(bert, t5):
    for g in (bert, t5):
        vg = view.build_view(g, view.make_spec(g, depth=None, fold_repeats=False), node_budget=100_000)
        groups = io_groups(g)
        shown = sum(1 for n in g.nodes if n.kind in ("input", "op", "output") and n.id not in groups.group_of)
        assert len(vg.nodes) == shown + len(groups.groups) and vg.notes == ()  # a grouped output: one box
        assert {c.id for c in vg.clusters} <= set(g.call_by_id)
        assert len(vg.edges) <= len(g.edges)


def test_bert_default_and_one_layer_expanded(bert):
    g = bert
    vg = view.build_view(g, view.make_spec(g))
    assert _labels(vg)[1:4] == ["embeddings: BertEmbeddings", "encoder: BertEncoder", "pooler: BertPooler"]
    two = view.build_view(g, view.make_spec(g, depth=2))
    assert [(n.label, n.count) for n in two.nodes if n.kind == "folded"] == [("BertLayer ×3", 3)]
    one = view.build_view(g, view.make_spec(g, expanded={"encoder.layer.0"}))
    assert [c.id for c in one.clusters] == ["mod:(root)", "mod:encoder", "mod:encoder.layer.0"]
    # the named layer is pinned: the other two stay folded after it
    assert [(n.id, n.count) for n in one.nodes if n.kind == "folded"] == [("fold:mod:encoder.layer.1", 2)]
    _connected(one)
    check_geometry(one, layout.layout_view(one))


def test_t5_first_block_differs_then_the_rest_fold(t5):
    g = t5
    vg = view.build_view(g, view.make_spec(g, depth=2))
    folded = sorted((n.id, n.count) for n in vg.nodes if n.kind == "folded")
    assert folded == [("fold:mod:decoder.block.1", 2), ("fold:mod:encoder.block.1", 2)]
    assert {"mod:encoder.block.0", "mod:decoder.block.0"} <= {n.id for n in vg.nodes}  # has the position bias
    _connected(vg)
    check_geometry(vg, layout.layout_view(vg, rankdir="LR"))


def test_every_op_layout_of_a_small_bert(bert):
    vg = view.build_view(bert, view.make_spec(bert, depth=None, fold_repeats=False))
    check_geometry(vg, layout.layout_view(vg))


def test_budget_on_a_real_model(t5):
    vg = view.build_view(t5, view.make_spec(t5, depth=None, fold_repeats=False), node_budget=120)
    assert len(vg.nodes) <= 120 and vg.notes
    check_geometry(vg, layout.layout_view(vg))


@pytest.mark.parametrize(
    "odd, expected",
    [
        (None, [("Block ×12", 12)]),
        (7, [("Block ×7", 7), ("layers.7: Block", 1), ("Block ×4", 4)]),
    ],
)
def test_traced_stack_fold_counts(odd, expected):
    g = _graph(Stack(12, odd), torch.zeros(2, 4))
    vg = view.build_view(g, view.make_spec(g))
    assert [(n.label, n.count) for n in vg.nodes if n.kind in ("folded", "module")] == expected


def test_traced_nested_repeats():
    g = _graph(Stages(), torch.zeros(2, 4))
    vg = view.build_view(g, view.make_spec(g))
    assert [(n.label, n.count) for n in vg.nodes if n.kind == "folded"] == [("Stack ×3", 3)]
    spec = view.make_spec(g, expanded={"stages.1"})
    inner = [(n.id, n.count) for n in view.build_view(g, spec).nodes if n.kind == "folded"]
    assert inner == [("fold:mod:stages.1.layers.0", 4)]


def test_opening_an_80_layer_models_kv_cache_costs_a_few_layouts_of_the_model_not_a_hundred() -> None:
    # A click on the collapsed cache output of an 80-layer Llama (the models' default: KV cache on) sends its
    # 160 tensors from 80 layers down to 160 boxes; dot's node placement spent 35-80 s on that root piece
    # (about 100 layouts of the whole every-op view) until layout/single/dot.py's NSLIMIT capped it.
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        num_hidden_layers=80,
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=64,
    )
    model = transformers.LlamaModel(cfg).eval()
    graph = trace_model(model, torch.randint(0, 64, (1, 4), generator=torch.Generator().manual_seed(0))).graph
    spec = view.make_spec(graph, depth=None, fold_repeats=False)
    every_op = view.build_view(graph, spec)
    cache_open = view.build_view(graph, view.toggle(graph, spec, "io:output:cache"))
    assert len(cache_open.nodes) == len(every_op.nodes) + 159  # 160 cached tensors instead of one box
    times = []
    for vg in (every_op, cache_open):
        layout.clear_cache()
        t0 = time.perf_counter()
        lay = layout.layout_view(vg)
        times.append(time.perf_counter() - t0)
        check_geometry(vg, lay)
    assert times[1] < 20 * times[0], times
