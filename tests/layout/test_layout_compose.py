"""The layout by module (``layout.composed.compose``) with the real ``dot``: composition invariants, reuse of
identical interiors (counted in dot runs), a toggle re-laying out only its chain, determinism, progress, big
views."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support_graphs import GraphBuilder, nested_graph, stack_graph
from test_layout import TOL, check_geometry

from torchvista_dash import layout
from torchvista_dash.layout.types import Layout
from torchvista_dash.model.graph import Graph
from torchvista_dash.view import build as view
from torchvista_dash.view.types import VisibleGraph

ROOT = Path(__file__).resolve().parents[2]


def _disjoint(a, b) -> bool:
    return a[2] <= b[0] + TOL or b[2] <= a[0] + TOL or a[3] <= b[1] + TOL or b[3] <= a[1] + TOL


def check_composed(vg: VisibleGraph, lay: Layout) -> None:
    """``check_geometry`` plus: sibling clusters are disjoint, and no box overlaps a cluster it is not in."""
    check_geometry(vg, lay)
    kids: dict[str | None, list[str]] = {}
    for c in vg.clusters:
        kids.setdefault(c.parent, []).append(c.id)
    for group in kids.values():
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                assert _disjoint(lay.clusters[a], lay.clusters[b]), f"sibling clusters {a} and {b} overlap"
    inside: dict[str, set[str]] = {}
    for thing in [*lay.nodes, *lay.clusters]:
        p = lay.parent[thing]
        while p is not None:
            inside.setdefault(p, set()).add(thing)
            p = lay.parent[p]
    for cid, box in lay.clusters.items():
        for n, nb in lay.nodes.items():
            if n not in inside.get(cid, ()):
                assert _disjoint(nb, box), f"node {n} lies on cluster {cid} it is not in"


def decoder_graph(n_layers: int, d: int = 8, distinct: bool = False) -> Graph:
    """A Llama-like decoder: per layer a norm, an attention call (q/k/v/o Linears, rotary ops fed by one
    position tensor shared by every layer, softmax), a residual add, an MLP call (two Linears) and an add.
    Every tensor is 1×d, as in a real decoder. ``distinct``: each layer's call says its index
    (``extra_repr``), so no
    two fold together."""
    b = GraphBuilder("Decoder")
    x = b.input("ids", (1, d))
    h = b.linear("embed", b.root, x, d, d, batch=1)
    pos = b.op("rotary", b.root, (x,), (1, d))  # one tensor into every layer: a bus, not 40 long edges
    for i in range(n_layers):
        layer = b.call(f"layers.{i}", "DecoderLayer", b.root, extra_repr=f"index={i}" if distinct else "")
        n1 = b.op("rms_norm", layer, (h,), (1, d))
        attn = b.call(f"layers.{i}.attn", "Attention", layer)
        q = b.linear(f"layers.{i}.attn.q", attn, n1, d, d, batch=1)
        k = b.linear(f"layers.{i}.attn.k", attn, n1, d, d, batch=1)
        v = b.linear(f"layers.{i}.attn.v", attn, n1, d, d, batch=1)
        q = b.op("mul", attn, (q, pos), (1, d))
        k = b.op("mul", attn, (k, pos), (1, d))
        s = b.op("softmax", attn, (q, k), (1, d))
        o = b.op("matmul", attn, (s, v), (1, d))
        o = b.linear(f"layers.{i}.attn.o", attn, o, d, d, batch=1)
        h = b.op("__add__", layer, (h, o), (1, d))
        mlp = b.call(f"layers.{i}.mlp", "MLP", layer)
        u = b.linear(f"layers.{i}.mlp.up", mlp, b.op("rms_norm", layer, (h,), (1, d)), d, d, batch=1)
        u = b.linear(f"layers.{i}.mlp.down", mlp, b.op("silu", mlp, (u,), (1, d)), d, d, batch=1)
        h = b.op("__add__", layer, (h, u), (1, d))
    b.output(b.op("rms_norm", b.root, (h,), (1, d)))
    return b.build()


def dense_graph(n_layers: int, d: int = 4) -> Graph:
    """A dense block: each layer concatenates all earlier outputs (n² edges, long skips) before its conv."""
    b = GraphBuilder("Dense")
    feats = [b.input("x", (1, d))]
    for i in range(n_layers):
        c = b.op("cat", b.root, feats, (1, d * (i + 1)))
        conv = b.call(f"layers.{i}", "Conv2d", b.root, builtin=True)
        feats.append(b.op("conv2d", conv, (c,), (1, d)))
    b.output(b.op("cat", b.root, feats, (1, d * (n_layers + 1))))
    return b.build()


def every_op(g: Graph, **kw) -> VisibleGraph:
    return view.build_view(g, view.make_spec(g, depth=None, fold_repeats=False, **kw))


@pytest.mark.parametrize("rankdir", ["TB", "LR"])
def test_composed_layout_keeps_every_invariant(dot_binary, rankdir):
    views = [
        every_op(stack_graph(5)),
        every_op(stack_graph(5), show_params=True),
        every_op(nested_graph(3, 3)),
        every_op(decoder_graph(3)),
        view.build_view(nested_graph(3, 4), view.make_spec(nested_graph(3, 4))),
        every_op(dense_graph(8)),
    ]
    for vg in views:
        lay = layout.layout_view(vg, rankdir=rankdir, method="composed")
        assert lay.rankdir == rankdir
        check_composed(vg, lay)


def test_edges_crossing_borders_are_one_polyline_from_box_to_box(dot_binary):
    vg = every_op(decoder_graph(2))
    lay = layout.layout_view(vg, method="composed")
    crossing = [e for e in lay.edges if lay.parent[e.src] != lay.parent[e.dst]]
    assert len(crossing) > 10
    for e in crossing:
        assert len(e.points) >= 3  # it runs through the clusters it leaves and enters
        for a, b in zip(e.points, e.points[1:], strict=False):
            assert abs(a[0] - b[0]) + abs(a[1] - b[1]) < max(lay.width, lay.height)  # no jump to elsewhere


def test_identical_layers_are_laid_out_once(dot_binary):
    layout.clear_cache()
    vg = every_op(decoder_graph(12))
    before = layout.cache_info()
    lay = layout.layout_view(vg, method="composed")
    after = layout.cache_info()
    check_composed(vg, lay)
    laid_out = after["piece_misses"] - before["piece_misses"]
    # the model, embed, 12 layers × (layer, attention, mlp, 6 Linears) and the top level: 111 pieces, but a
    # layer's pieces are the same for every layer (the first and last differ only where they meet their
    # neighbours)
    assert len(vg.clusters) == 2 + 12 * 9
    assert laid_out <= 2 * 9 + 2 + 9
    assert after["dot_runs"] - before["dot_runs"] <= 2 * 5  # at most 2 dot processes per level of nesting
    # the same interior, placed 12 times: layer 5 and layer 6 differ by a translation only
    b5, b6 = lay.clusters["mod:layers.5"], lay.clusters["mod:layers.6"]
    dx, dy = b6[0] - b5[0], b6[1] - b5[1]
    q5, q6 = lay.clusters["mod:layers.5.attn.q"], lay.clusters["mod:layers.6.attn.q"]
    assert q6 == pytest.approx((q5[0] + dx, q5[1] + dy, q5[2] + dx, q5[3] + dy), abs=0.02)


@pytest.mark.parametrize("rankdir", ["TB", "LR"])
def test_a_stack_of_identical_layers_is_one_straight_column(dot_binary, rankdir):
    # each layer takes the hidden states and the shared position tensor and gives hidden states: with the edge
    # between two layers kept straight port to port, layer after layer stepped sideways (a diagonal staircase)
    vg = every_op(decoder_graph(8))
    lay = layout.layout_view(vg, rankdir=rankdir, method="composed")
    check_composed(vg, lay)
    across = 0 if rankdir == "TB" else 1
    starts = [lay.clusters[f"mod:layers.{i}"][across] for i in range(8)]
    assert max(starts) - min(starts) <= 3.0, starts

    # and the hidden states go from one layer into the next across the gap between them, within the column
    def layer_of(box_id: str) -> str | None:
        p = lay.parent[box_id]
        while p is not None and p.count(".") > 1:
            p = lay.parent[p]
        return p

    along = 1 - across
    for i in range(7):
        a, b = lay.clusters[f"mod:layers.{i}"], lay.clusters[f"mod:layers.{i + 1}"]
        lo, hi = sorted(
            (a[along] if rankdir == "TB" else a[along + 2], b[along + 2] if rankdir == "TB" else b[along])
        )
        joining = [
            e
            for e in lay.edges
            if layer_of(e.src) == f"mod:layers.{i}" and layer_of(e.dst) == f"mod:layers.{i + 1}"
        ]
        assert joining
        for e in joining:
            gap = [p[across] for p in e.points if lo - 0.5 <= p[along] <= hi + 0.5]
            assert gap and a[across] <= min(gap) and max(gap) <= a[across + 2], (i, e.points)


def test_a_toggle_lays_out_only_the_chain_up_from_the_toggled_call(dot_binary):
    g = decoder_graph(10)
    spec = view.make_spec(g, depth=None, fold_repeats=False)
    layout.clear_cache()
    layout.layout_view(view.build_view(g, spec), method="composed")
    closed = view.toggle(g, spec, "mod:layers.4")
    before = layout.cache_info()
    vg = view.build_view(g, closed)
    lay = layout.layout_view(vg, method="composed")
    after = layout.cache_info()
    check_composed(vg, lay)
    # layers.4 is now a box: only its parent (the model's interior) and the top level change
    assert after["piece_misses"] - before["piece_misses"] == 2
    # layout_view keeps no whole views: the way back is answered by the pieces
    before = layout.cache_info()
    layout.layout_view(view.build_view(g, spec), method="composed")
    assert layout.cache_info()["piece_misses"] == before["piece_misses"]


def test_composed_layout_is_deterministic_across_processes_and_caches(dot_binary):
    code = (
        "import sys; sys.path[:0] = ['tests', 'tests/layout'];"
        "from test_layout_compose import decoder_graph, every_op;"
        "from torchvista_dash import layout; print(repr(layout.layout_view(every_op(decoder_graph(4)),"
        " method='composed')))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300, check=True
    ).stdout.strip()
    layout.clear_cache()
    fresh = layout.layout_view(every_op(decoder_graph(4)), method="composed")
    from_pieces = layout.layout_view(every_op(decoder_graph(4)), method="composed")  # every piece cached
    assert fresh == from_pieces and repr(fresh) == other


def test_progress_reports_modules_then_composition(dot_binary):
    calls: list[tuple[str, int, int]] = []
    vg = every_op(decoder_graph(3))
    layout.clear_cache()
    layout.layout_view(vg, method="composed", progress=lambda stage, i, n: calls.append((stage, i, n)))
    stages = [c[0] for c in calls]
    assert stages[0] == "modules" and stages[-1] == "compose"
    done = [i for s, i, _ in calls if s == "modules"]
    assert done == sorted(done) and done[-1] == calls[0][2] == len(vg.clusters) + 1


def test_a_forty_layer_decoder_every_op_view_lays_out(dot_binary):
    vg = every_op(decoder_graph(40), show_params=True)
    assert len(vg.nodes) > 1000 and len(vg.clusters) > 300
    layout.clear_cache()
    lay = layout.layout_view(vg, timeout=300)  # a generous bound, not a timed assertion
    check_geometry(vg, lay)


def test_a_dense_block_lays_out_with_labels_not_as_rank_nodes(dot_binary):
    vg = view.build_view(dense_graph(24), view.make_spec(dense_graph(24)))
    assert len(vg.edges) > 300
    lay = layout.layout_view(vg, timeout=300, method="composed")
    check_composed(vg, lay)
    shown = [e for e in lay.edges if e.label_pos is not None]
    assert len({(e.src, e.label) for e in shown}) == len(shown) == len({(e.src, e.tensor) for e in vg.edges})


def test_auto_picks_the_composed_layout_for_views_with_open_modules(dot_binary):
    assert layout.choose_method(every_op(decoder_graph(2))) == "composed"
    g = stack_graph(3)
    assert layout.choose_method(view.build_view(g, view.make_spec(g))) == "composed"
    closed = view.build_view(g, view.make_spec(g, depth=0))
    assert not closed.clusters and layout.choose_method(closed) == "single"
    check_geometry(closed, layout.layout_view(closed))
    with pytest.raises(ValueError, match="method"):
        layout.layout_view(view.build_view(g, view.make_spec(g)), method="fast")


def test_kept_dot_processes_answer_like_fresh_ones_and_die_when_they_overrun(dot_binary):
    import re

    from test_layout import _dot_children

    from torchvista_dash.layout.graphviz import dotpool

    graphs = ["digraph { a -> b; a -> c; c -> d }", "digraph { rankdir=LR; x -> y; y -> z; x -> z }"]
    names = re.compile(rb'"name": "%\d+"')  # dot numbers anonymous subgraphs on, process-wide
    first = dotpool.run_graphs("json0", graphs, 30)
    again = dotpool.run_graphs("json0", graphs[::-1], 30)[::-1]  # the same process, other order
    fresh = [layout.run_dot(g, "json0") for g in graphs]
    assert (
        [names.sub(b"", d) for d in first]
        == [names.sub(b"", d) for d in again]
        == [names.sub(b"", d) for d in fresh]
    )
    assert dotpool.idle_pids()
    body = "".join(f"v{i} -> v{(i * 7919 + k) % 1500};" for i in range(1500) for k in (1, 2, 3))
    with pytest.raises(layout.GraphvizError, match="time budget"):
        dotpool.run_graphs("json0", ["digraph {" + body + "}"], 0.05)
    assert _dot_children() == []  # the overrunning one killed and reaped; only idle ones are left
    dotpool.shut_down()
    assert dotpool.idle_pids() == []


def test_export_of_a_big_view_draws_a_progress_bar_on_the_terminal(dot_binary, tmp_path):
    src = tmp_path / "decoder.json"
    decoder_graph(12, distinct=True).save(src)  # nothing folds: --depth all is every op
    out = tmp_path / "decoder.svg"
    run = subprocess.run(
        [sys.executable, "-m", "torchvista_dash", "export", str(src), "-o", str(out), "--depth", "all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 0, run.stderr
    assert out.read_text().startswith("<?xml") or "<svg" in out.read_text()[:2000]
    frames = run.stderr.splitlines()  # text mode reads each "\r" redraw of the bar as a line end
    bars = [f for f in frames if f.startswith("laying out modules [")]
    assert len(bars) >= 3 and bars[-1].rstrip().endswith("/111")  # i of n modules, counting up to n
    assert "laid out 111 modules; composing the picture" in run.stderr


def test_the_guard_counts_edges_not_boxes(dot_binary, monkeypatch):
    from torchvista_dash.layout.composed import compose

    vg = view.build_view(dense_graph(12), view.make_spec(dense_graph(12)))
    assert len(vg.nodes) < 40  # few boxes: no node budget would stop this
    monkeypatch.setattr(compose, "MAX_PIECE_EDGES", 50)
    layout.clear_cache()
    with pytest.raises(layout.GraphvizError, match=r"holds \d+ edges .* over the 50 .* collapse"):
        layout.layout_view(vg, method="composed")


@pytest.mark.parametrize("tall", [3_000.0, 150_000.0])
def test_edges_meet_a_child_cluster_where_its_ports_are_even_past_graphviz_cell_limit(dot_binary, tall):
    # a child cluster's border is a table of whole-point cells; Graphviz ignores a cell over 65,535 points
    # (an 80-layer model is 270,000 tall), which put every port of such a cluster in the wrong place
    from torchvista_dash.layout.composed.piecedot import layout_pieces

    kids = (((50.0, 30.0), (), ()), ((300.0, tall), (40, 250), ()))
    key = ("TB", kids, 0, 0, ((0, 1, -1, -1, 0), (0, 1, -1, -1, 1)))
    (lay,), _runs = layout_pieces([key], 60.0)
    x0 = lay.centres[1][0] - 150.0
    ends = sorted(lay.points[lay.starts[k + 1] - 1][0] - x0 for k in range(2))
    assert ends == pytest.approx([40.5, 250.5], abs=1.0)
    top = lay.centres[1][1] + tall / 2  # on the cluster's upper border, not inside it
    assert [lay.points[lay.starts[k + 1] - 1][1] for k in range(2)] == pytest.approx([top, top], abs=2.0)


def test_a_piece_whose_boxes_nothing_joins_lays_out(dot_binary) -> None:
    """Two boxes in a cluster with no edge and no port (a loaded trace can hold one): dot places them, and the
    piece has no edge points at all (the fuzz test's case 315 once broke reading it)."""
    from torchvista_dash.layout.composed.piecedot import layout_pieces

    key = ("TB", (((44.2, 43.1), (), ()), ((189.0, 163.0), (), ())), 0, 0, ())
    (piece,), _runs = layout_pieces([key], timeout=30.0)
    assert len(piece.centres) == 2 and piece.starts[-1:] in ((0,), ())
    assert piece.width >= 189.0 and piece.height >= 163.0
