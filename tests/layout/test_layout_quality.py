"""Drawing quality of the layout by module with the real ``dot``, beside the single run where that finishes:
edge crossings held at or below what was measured when each cause was cut (regression bounds, not timings),
the composition invariants, and stacks of layers standing in one column.

Bounds were measured with this repository's code on the views below (small configs, random weights); the
counts before the changes are in the comment beside each. Crossings are counted as in
``bench/bench_layout_scale.py`` (proper intersections of segments of different edges)."""

from __future__ import annotations

import pytest
import torch
import transformers
from test_layout_compose import check_composed, dense_graph, every_op

from bench.bench_layout_scale import DenseNet121, crossings, quality
from torchvista_dash import layout, trace_model
from torchvista_dash.model.graph import Graph


def _graph(model: torch.nn.Module, *args: torch.Tensor, **kwargs: object) -> Graph:
    torch.manual_seed(0)
    return trace_model(model.eval(), args, kwargs=kwargs or None).graph


def _ids() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randint(0, 64, (1, 6))


def gpt2() -> Graph:
    """12 blocks returning their cached keys and values: 24 tensors leave the model at 12 heights."""
    cfg = transformers.GPT2Config(
        n_layer=12, n_embd=16, n_head=2, vocab_size=64, n_positions=16, bos_token_id=0, eos_token_id=0
    )
    return _graph(transformers.GPT2Model(cfg), _ids())


def t5() -> Graph:
    """Encoder-decoder: every decoder block takes the encoder's output and returns cached keys and values."""
    cfg = transformers.T5Config(num_layers=3, d_model=16, d_ff=32, num_heads=2, d_kv=8, vocab_size=64)
    return _graph(transformers.T5Model(cfg), input_ids=_ids(), decoder_input_ids=_ids())


def llama() -> Graph:
    """8 layers each fed the rotary cos and sin and the mask: three buses beside the stack."""
    cfg = transformers.LlamaConfig(
        hidden_size=16,
        intermediate_size=32,
        num_attention_heads=2,
        num_key_value_heads=1,
        num_hidden_layers=8,
        vocab_size=64,
        attn_implementation="eager",
    )
    return _graph(
        transformers.LlamaModel(cfg),
        _ids(),
        attention_mask=torch.ones(1, 6, dtype=torch.long),
        use_cache=False,
    )


def bert() -> Graph:
    """12 layers: from ``layer.10`` on, the modules' titles are a digit longer and the layers 18 points
    wider."""
    cfg = transformers.BertConfig(
        num_hidden_layers=12,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=32,
        vocab_size=64,
        max_position_embeddings=16,
    )
    return _graph(transformers.BertModel(cfg), _ids())


def densenet() -> Graph:
    torch.manual_seed(0)
    return _graph(DenseNet121(), torch.randn(1, 3, 32, 32))


# (view, crossings now): in the comment, before the last change (shared out-ports and their collectors,
# out-ports where their tensors leave, polylines) and before the first (the bundle of leaving tensors, trunks
# free of rank constraints, equal-size-only stacks aligned even where every earlier layer fans in)
BOUNDS = [
    pytest.param(gpt2, 12, id="gpt2-every-op"),  # before: 66; first: 542
    pytest.param(t5, 64, id="t5-every-op"),  # before: 161; first: 1,718
    pytest.param(llama, 118, id="llama-8-every-op"),  # before: 232; first: 386
    pytest.param(lambda: dense_graph(12), 447, id="dense-block-12"),  # before: 505; first: 3,041
    pytest.param(lambda: dense_graph(32), 21_956, id="dense-block-32"),  # before: 22,899; first: 140,593
    pytest.param(densenet, 10_259, id="densenet121-every-op"),  # before: 12,253; first: 64,721
]


@pytest.mark.parametrize("make, bound", BOUNDS)
def test_crossings_stay_at_or_below_their_measured_bound(dot_binary, make, bound):
    vg = every_op(make())
    layout.clear_cache()
    lay = layout.layout_view(vg, method="composed")
    check_composed(vg, lay)
    q = quality(vg, lay)
    assert (q["overlaps"], q["outside"], q["siblings"], q["bad_ends"]) == (0, 0, 0, 0)
    assert crossings(lay) <= bound
    layout.clear_cache()
    again = layout.layout_view(vg, method="composed")  # deterministic: the same drawing to the digit
    assert again == lay


def test_gpt2_blocks_send_their_cache_down_one_collector_and_it_crosses_nothing(dot_binary):
    """Each block's cached key and value leave it by one port, as one line, and join one collector trunk down
    the side of the stack to the model's ``cache`` output: each block's line runs on along the next block's.
    Before, they left side by side, crossed each other twice below every block and ran down as 24 lines
    (54 crossings). What is left is one crossing per block inside its attention (the key's edge out crosses
    the value's into the attention op), as in the single run."""
    vg = every_op(gpt2())
    layout.clear_cache()
    lay = layout.layout_view(vg, method="composed")
    check_composed(vg, lay)
    parent = {n.id: n.parent for n in vg.nodes}
    lines = []
    for i in range(12):
        bottom = lay.clusters[f"mod:h.{i}"][1]
        cache = [
            p.points
            for e, p in zip(vg.edges, lay.edges, strict=True)
            if e.dst.startswith("io:output") and parent[e.src] == f"mod:h.{i}.attn"
        ]
        assert len(cache) == 2, cache
        key, value = ([q for q in pts if q[1] < bottom - 0.01] for pts in cache)
        assert key and key == value  # one line from the block's border down to the output
        lines.append(key)
    for i, (upper, lower) in enumerate(zip(lines[:-2], lines[1:-1], strict=True)):
        # block i+1's line joins block i's beside block i+2 and runs along it from there (the trunk)
        on = [p for p in lower if _off(p, upper) <= 1.0]
        assert on and max(y for _x, y in on) > lay.clusters[f"mod:h.{i + 2}"][1], (i, upper, lower)
    assert crossings(lay) <= 12


def test_bert_layers_stand_in_one_column_and_draw_within_the_area_target(dot_binary):
    vg = every_op(bert())
    layout.clear_cache()
    lay = layout.layout_view(vg, method="composed")
    check_composed(vg, lay)
    centres = [
        (b[0] + b[2]) / 2
        for cid, b in lay.clusters.items()
        if cid.startswith("mod:encoder.layer.") and cid.count(".") == 2
    ]
    assert len(centres) == 12
    assert max(centres) - min(centres) <= 1.0, centres  # before: layer.10 and .11 stood 300 points aside
    single = layout.layout_view(vg, method="single")
    area = lay.width * lay.height / (single.width * single.height)
    assert area <= 1.3, area  # before: 1.57
    assert crossings(lay) <= crossings(single)


def test_a_tensor_feeding_every_layer_runs_as_one_trunk_with_short_branches(dot_binary):
    """The mask feeds all 8 layers: its 8 edges share one path from their source down to each branch, so the
    drawing shows one line beside the stack, not 8 long parallel edges."""
    g = llama()
    vg = every_op(g)
    lay = layout.layout_view(vg, method="composed")
    by_tensor: dict[tuple[str, str], list] = {}
    for e, path in zip(vg.edges, lay.edges, strict=True):
        by_tensor.setdefault((e.src, e.tensor), []).append(path)
    fans = [paths for paths in by_tensor.values() if len(paths) == 8]
    assert fans, "no tensor feeds all 8 layers"
    for paths in fans:
        paths.sort(key=lambda p: -p.points[-1][1])  # nearest consumer first (TB: y grows upward)
        drops = []
        for near, far in zip(paths, paths[1:], strict=False):
            # the farther edge runs along the nearer one's path down to where the nearer one branches off
            shared = 0
            while shared + 1 < len(near.points) and _off(near.points[shared + 1], far.points) <= 1.0:
                shared += 1
            assert shared >= 1, (near.points, far.points)
            drops.append(near.points[0][1] - near.points[shared][1])
        assert drops == sorted(drops) and drops[-1] > drops[0], drops  # branching off lower and lower


def _off(p: tuple[float, float], line: tuple[tuple[float, float], ...]) -> float:
    """How far ``p`` lies from the polyline ``line`` (points)."""
    best = float("inf")
    for (ax, ay), (bx, by) in zip(line, line[1:], strict=False):
        dx, dy = bx - ax, by - ay
        t = (
            0.0
            if dx == dy == 0
            else max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / (dx * dx + dy * dy)))
        )
        best = min(best, ((ax + t * dx - p[0]) ** 2 + (ay + t * dy - p[1]) ** 2) ** 0.5)
    return best
