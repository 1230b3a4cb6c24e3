"""Layouts from the real Graphviz ``dot``: geometry (no overlaps, containment, edge ends), determinism,
the cache, and the errors for a missing, failing or overrunning dot."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support_graphs import failed_graph, nested_graph, stack_graph, twice_graph

from torchvista_dash import layout
from torchvista_dash.layout.single.dot import build_dot
from torchvista_dash.layout.single.parse import parse_json
from torchvista_dash.layout.types import Layout
from torchvista_dash.model.graph import TensorMeta
from torchvista_dash.view import build as view
from torchvista_dash.view.types import Cluster, ViewSpec, VisibleEdge, VisibleGraph, VisibleNode

TOL = 1.0  # points: dot rounds coordinates to 2 decimals; arrow tips touch the box border


def _overlap(a, b) -> bool:
    return a[0] < b[2] - TOL and b[0] < a[2] - TOL and a[1] < b[3] - TOL and b[1] < a[3] - TOL


def _inside(inner, outer, tol: float = TOL) -> bool:
    return (
        inner[0] >= outer[0] - tol
        and inner[1] >= outer[1] - tol
        and inner[2] <= outer[2] + tol
        and inner[3] <= outer[3] + tol
    )


def _near(p, box, tol: float) -> bool:
    return box[0] - tol <= p[0] <= box[2] + tol and box[1] - tol <= p[1] <= box[3] + tol


def check_geometry(vg: VisibleGraph, lay: Layout) -> None:
    """Every visible thing placed; no two node boxes overlap; every node (and cluster) lies inside each
    cluster that contains it; every edge runs from its source box to its target box."""
    assert set(lay.nodes) == {n.id for n in vg.nodes}
    assert set(lay.clusters) == {c.id for c in vg.clusters}
    boxes = list(lay.nodes.items())
    for i, (a, ba) in enumerate(boxes):
        assert ba[0] < ba[2] and ba[1] < ba[3]
        for b, bb in boxes[i + 1 :]:
            assert not _overlap(ba, bb), f"{a} overlaps {b}: {ba} {bb}"
    for thing, box in [*lay.nodes.items(), *lay.clusters.items()]:
        p = lay.parent[thing]
        while p is not None:
            assert _inside(box, lay.clusters[p]), f"{thing} {box} is not inside cluster {p} {lay.clusters[p]}"
            p = lay.parent[p]
    assert len(lay.edges) == len(vg.edges)
    labelled: dict[tuple[str, str], list] = {}
    for e, ve in zip(lay.edges, vg.edges, strict=True):
        assert (e.src, e.dst) == (ve.src, ve.dst)
        assert len(e.points) >= 2
        assert _near(e.points[0], lay.nodes[e.src], 2.0), f"edge {e.src}->{e.dst} starts off its source"
        assert _near(e.points[-1], lay.nodes[e.dst], 2.0), f"edge {e.src}->{e.dst} ends off its target"
        if ve.label:
            assert e.label == ve.label
            labelled.setdefault((ve.src, ve.tensor), []).append(e.label_pos)
    for group, places in labelled.items():  # a tensor's shape is written at least once (by layout by module:
        assert any(p is not None for p in places), group  # once, for all the edges carrying it)
    for x0, y0, x1, y1 in [*lay.nodes.values(), *lay.clusters.values()]:
        assert -TOL <= x0 and x1 <= lay.width + TOL and -TOL <= y0 and y1 <= lay.height + TOL


def _views():
    s = stack_graph(4, odd_layer=2)
    n = nested_graph(3, 3)
    f = failed_graph()
    t = twice_graph()
    return [
        ("stack-default", view.build_view(s, view.make_spec(s))),
        (
            "stack-every-op",
            view.build_view(s, view.make_spec(s, depth=None, fold_repeats=False, show_params=True)),
        ),
        (
            "nested-open",
            view.build_view(
                n,
                view.make_spec(n, depth=None, unfolded={"fold:mod:stages.0"}, expanded={"stages.1.blocks.1"}),
            ),
        ),
        ("failed-every-op", view.build_view(f, view.make_spec(f, depth=None))),
        ("twice", view.build_view(t, view.make_spec(t, expanded={"proj"}))),
    ]


@pytest.mark.parametrize("rankdir", ["TB", "LR"])
def test_geometry_on_real_dot(dot_binary, rankdir):
    for name, vg in _views():
        lay = layout.layout_view(vg, rankdir=rankdir)
        assert lay.rankdir == rankdir, name
        check_geometry(vg, lay)


def test_top_to_bottom_and_left_to_right(dot_binary):
    g = stack_graph(2)
    vg = view.build_view(g, view.make_spec(g, fold_repeats=False))
    first, last = vg.nodes[0].id, vg.nodes[-1].id
    tb = layout.layout_view(vg)
    assert tb.nodes[first][1] > tb.nodes[last][3]  # y up: the input is above the output
    lr = layout.layout_view(vg, rankdir="LR")
    assert lr.nodes[first][2] < lr.nodes[last][0]  # the input is left of the output
    with pytest.raises(ValueError, match="rankdir"):
        layout.layout_view(vg, rankdir="sideways")


def test_node_sizes_follow_label_text(dot_binary):
    g = twice_graph()
    vg = view.build_view(g, view.make_spec(g))
    lay = layout.layout_view(vg)
    width = {i: b[2] - b[0] for i, b in lay.nodes.items()}
    assert width["mod:proj#1"] > width["n:4"]  # "proj: Linear #1" is longer than "relu"
    for n in vg.nodes:
        w, h = layout.node_size(n)
        assert width[n.id] == pytest.approx(w, abs=0.5)  # fixedsize: dot keeps our estimate


def test_layout_is_deterministic(dot_binary):
    g = nested_graph(3, 3)
    spec = view.make_spec(g, depth=None, fold_repeats=False)
    layout.clear_cache()
    a = layout.layout_view(view.build_view(g, spec))
    layout.clear_cache()
    b = layout.layout_view(view.build_view(nested_graph(3, 3), spec))
    assert a is not b and a == b
    assert (
        layout.to_dot(view.build_view(g, spec)).to_string()
        == layout.to_dot(view.build_view(g, spec)).to_string()
    )


@pytest.fixture()
def quiet() -> None:
    """Wait until no app in this process lays out in the background (warm-up threads, the precompute pool):
    the tests below count dot runs and cache entries, which are process-wide."""
    import threading

    from torchvista_dash.app.traces import state

    for t in threading.enumerate():
        if t.name == "tvd-warm-up":
            t.join(timeout=60)
    assert state.precomputer.wait_idle(timeout=120)  # the background queue has run dry


def test_returning_to_a_view_costs_no_dot_run(dot_binary, quiet):
    g = stack_graph(4)
    start = view.make_spec(g, fold_repeats=False)
    layout.clear_cache()
    runs = layout.cache_info()["dot_runs"]
    first = layout.layout_view(view.build_view(g, start))
    assert layout.cache_info()["dot_runs"] > runs
    opened = layout.layout_view(view.build_view(g, view.toggle(g, start, "mod:layers.1")))
    runs = layout.cache_info()["dot_runs"]
    back = layout.layout_view(
        view.build_view(g, view.toggle(g, view.toggle(g, start, "mod:layers.1"), "mod:layers.1"))
    )
    assert back == first and opened != first  # its pieces were all cached: no dot run
    assert layout.cache_info()["dot_runs"] == runs
    layout.layout_view(view.build_view(g, start), rankdir="LR")
    assert layout.cache_info()["dot_runs"] > runs  # another option is another layout


def test_layout_view_keeps_no_whole_view_layout(dot_binary, quiet):
    """The owner of a view's layout caches it (the app's registry entry); layout_view only keeps pieces."""
    g = stack_graph(3)
    vg = view.build_view(g, view.make_spec(g, depth=0))  # nothing open: one dot run over the whole view
    assert layout.choose_method(vg) == "single"
    first = layout.layout_view(vg)
    runs = layout.cache_info()["dot_runs"]
    again = layout.layout_view(vg)
    assert again == first and again is not first
    assert layout.cache_info()["dot_runs"] == runs + 1


def test_labels_that_need_escaping(dot_binary):
    m = TensorMeta((1,), "float32", "cpu", 4)
    vg = VisibleGraph(
        nodes=(
            VisibleNode("n:0", "input", 'say "hi"\\', None),
            VisibleNode("n:1", "op", "a;b{c}", "mod:x"),
            VisibleNode("n:2", "output", "->", None, sublabel="α β"),
        ),
        edges=(VisibleEdge("n:0", "n:1", "n:0/0", m, label='"1"'), VisibleEdge("n:1", "n:2", "n:1/0", m)),
        clusters=(Cluster("mod:x", 'x: "Weird" \\ class', None),),
        spec=ViewSpec(),
    )
    lay = layout.layout_view(vg)
    check_geometry(vg, lay)
    assert 'id="n:1"' in layout.to_dot(vg).to_string()  # the full DOT keeps ids and text, quoted once


def test_missing_dot_says_how_to_install(monkeypatch):
    monkeypatch.delenv("TVD_DOT", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    layout.clear_cache()
    g = twice_graph()
    for method in ("single", "composed"):  # dot processes kept running do not hide a missing dot
        with pytest.raises(layout.GraphvizNotFound) as err:
            layout.layout_view(view.build_view(g, view.make_spec(g)), method=method)
    msg = str(err.value)
    assert "Graphviz" in msg and "apt-get install graphviz" in msg and "brew" in msg and "conda" in msg
    monkeypatch.setenv("TVD_DOT", "/nonexistent/dot")
    with pytest.raises(layout.GraphvizNotFound, match="TVD_DOT"):
        layout.find_dot()


def test_failing_dot_is_a_clear_error(dot_binary):
    with pytest.raises(layout.GraphvizError, match="dot failed"):
        layout.run_dot("digraph { a -> ", "json")


def test_overrunning_dot_is_killed(dot_binary):
    # a dense graph that takes dot far longer than the 0.05 s budget
    body = "".join(f"v{i} -> v{(i * 7919 + k) % 1500};" for i in range(1500) for k in (1, 2, 3))
    with pytest.raises(layout.GraphvizError, match="time budget"):
        layout.run_dot("digraph {" + body + "}", "json", timeout=0.05)
    assert _dot_children() == []  # killed and reaped, not left running


def test_dot_started_early_is_killed_when_the_dot_cannot_be_built(dot_binary, monkeypatch):
    # layout_view starts dot before writing the DOT; a failure while writing must not leave dot running
    def broken_build(*args, **kwargs):
        raise ValueError("no DOT today")

    monkeypatch.setattr(layout, "build_dot", broken_build)
    layout.clear_cache()
    g = twice_graph()
    with pytest.raises(ValueError, match="no DOT today"):
        layout.layout_view(view.build_view(g, view.make_spec(g)), method="single")
    assert _dot_children() == []


def test_dot_run_is_fed_once(dot_binary):
    with layout.DotRun("json") as run:
        assert b'"objects"' in run.feed("digraph { a -> b }")
        with pytest.raises(RuntimeError, match="fed once"):
            run.feed("digraph { a }")
    assert _dot_children() == []


def test_streamed_run_gives_dots_output_and_its_errors(dot_binary):
    # the pieces handed over while dot writes add up to its whole output, for a DOT bigger than a pipe's
    # buffer
    source = "digraph {" + "".join(f'n{i} [label="{"x" * 40}"]; n{i} -> n{i + 1};' for i in range(2500)) + "}"
    assert len(source) > 1 << 17
    pieces: list[bytes] = []
    with layout.DotRun("json0") as run:
        out = run.feed(source, pieces.append)
    assert len(pieces) >= 1 and b"".join(pieces) == out == layout.run_dot(source, "json0")
    with pytest.raises(layout.GraphvizError, match="dot failed"):
        layout.DotRun("json0").feed("digraph { a -> ", pieces.append)
    body = "".join(f"v{i} -> v{(i * 7919 + k) % 1500};" for i in range(1500) for k in (1, 2, 3))
    with pytest.raises(layout.GraphvizError, match="time budget"):
        layout.DotRun("json0", timeout=0.05).feed("digraph {" + body + "}", pieces.append)
    assert _dot_children() == []


def test_without_select_on_pipes_the_output_is_handed_over_once_at_the_end(dot_binary, monkeypatch):
    from torchvista_dash.layout.graphviz import run as run_mod

    monkeypatch.setattr(run_mod, "_CAN_PUMP", False)  # as on Windows
    pieces: list[bytes] = []
    with layout.DotRun("json0") as run:
        out = run.feed("digraph { a -> b }", pieces.append)
    assert pieces == [out] and b'"objects"' in out
    layout.clear_cache()
    g = twice_graph()
    vg = view.build_view(g, view.make_spec(g))
    dot, names = build_dot(vg)
    assert layout.layout_view(vg, method="single") == parse_json(
        layout.run_dot(dot.to_string(), layout.DOT_FORMAT), vg, names, "TB"
    )


def _dot_children() -> list[int]:
    """Pids of `dot` processes whose parent is this test process (from /proc), but for the idle ones the
    layout by module keeps for its next batch (``layout.graphviz.dotpool``)."""
    from torchvista_dash.layout.graphviz import dotpool

    kept = set(dotpool.idle_pids())
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm = text[text.index("(") + 1 : text.rindex(")")]
        ppid = int(text[text.rindex(")") + 2 :].split()[1])
        if comm == "dot" and ppid == os.getpid() and int(stat.parent.name) not in kept:
            out.append(int(stat.parent.name))
    return out


def test_layout_run_writes_only_what_moves_something(dot_binary):
    """The layout run's DOT leaves out node text, fonts and styling (boxes are fixedsize); dot places
    everything exactly where it does for the full DOT that ``to_dot`` writes."""
    from torchvista_dash.layout.single.dot import build_dot
    from torchvista_dash.layout.single.parse import parse_json

    for name, vg in _views():
        lean, lean_names = build_dot(vg)
        full, full_names = build_dot(vg, ids=True)
        assert "label" not in str(lean.get_node(str(0))[0].get_attributes()), name
        a = parse_json(layout.run_dot(lean.to_string(), layout.DOT_FORMAT), vg, lean_names, "TB")
        b = parse_json(layout.run_dot(full.to_string(), layout.DOT_FORMAT), vg, full_names, "TB")
        assert a.nodes == b.nodes and a.clusters == b.clusters, name
        assert [(e.points, e.label_pos) for e in a.edges] == [(e.points, e.label_pos) for e in b.edges], name


def test_spline_polylines_read_dots_pos_strings():
    from torchvista_dash.layout.single.parse import spline_points, spline_polylines

    straight = "e,0,30 0,0 0,10 0,20 0,27"  # control points on the chord: end point only
    curved = "s,1,1 e,50,60 0,0 30,0 40,10 40,40"  # one bent piece: 4 samples on the Bézier
    long = "e,9,9 0,0 1,1 2,2 3,3 3,3\\\n 5,8 9,4"  # dot's line continuation inside a pos
    lines = spline_polylines([straight, curved, long])
    assert lines == [spline_points(straight), spline_points(curved), spline_points(long)]
    assert lines[0] == ((0.0, 0.0), (0.0, 27.0), (0.0, 30.0))
    pts = lines[1]
    assert pts[0] == (1.0, 1.0) and pts[1] == (0.0, 0.0) and pts[-1] == (50.0, 60.0) and len(pts) == 7
    assert pts[-2] == (40.0, 40.0)  # t = 1 is the piece's last control point
    assert pts[3] == (0.125 * 0 + 0.375 * 30 + 0.375 * 40 + 0.125 * 40, 0.375 * 10 + 0.125 * 40)  # t = 1/2
    assert all(isinstance(v, float) for p in lines[2] for v in p) and lines[2][-1] == (9.0, 9.0)
    assert spline_polylines([]) == []
