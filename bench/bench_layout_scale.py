"""Layout at any size: the layout by module (``method="composed"``) against one dot run over the whole view
(``method="single"``), on the same views, in one run: time and drawing quality.

Command (from the repository root):
    .venv/bin/python bench/bench_layout_scale.py [--repeat 3] [--single-timeout 60] [--moe-only] [--stretch]

Per view: cold ``layout_view`` (every cache cleared; median of --repeat), the single run on the same view
(dot stopped after --single-timeout s), and for both drawings: box overlaps, boxes outside their clusters,
overlapping sibling clusters, edges not starting/ending on their boxes, edge crossings (proper intersections
of polyline segments of different edges) and drawing area (width × height); the ratios composed / single.
A single run stopped by the timeout is run again the old way, without the invisible edges holding inputs and
outputs on the first and last rank, and marked "(no io ranks)": with them dot does not finish GPT-2 or T5;
stopped again, without edge labels ("(no io ranks, no labels)"), then without ``newrank`` too ("(plain)"); a
baseline where an edge runs upwards is dropped (ranks gone wrong).
For the 80-layer Llama: closing one decoder layer (a new view: only its chain is laid out again) and opening
it again with the view cache cleared (every piece from the piece cache). Models are built from configs
(random weights, Llama on the meta device: no memory, no downloads). Writes bench/results/layout_scale.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import transformers
from torch import nn

from torchvista_dash import layout, trace_model
from torchvista_dash.demos import DEMOS, demo_trace
from torchvista_dash.layout.single import dot as layout_dot
from torchvista_dash.layout.types import Layout
from torchvista_dash.model.graph import Graph
from torchvista_dash.view import build as view
from torchvista_dash.view.types import VisibleGraph

RESULTS = Path(__file__).parent / "results" / "layout_scale.md"
MOE_RESULTS = RESULTS.with_name("layout_scale_moe.md")  # --moe-only
COMMAND = ".venv/bin/python bench/bench_layout_scale.py"
TOL = 1.0


# ---- models ------------------------------------------------------------------------------------
class Dense(nn.Module):
    """The issue's dense block: each layer concatenates all earlier outputs."""

    def __init__(self, n: int = 32) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Conv2d(4 * (i + 1), 4, 1) for i in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = [x]
        for layer in self.layers:
            f.append(layer(torch.cat(f, 1)))
        return torch.cat(f, 1)


class DenseLayer(nn.Module):
    def __init__(self, c: int, growth: int = 32, bn: int = 4) -> None:
        super().__init__()
        self.norm1, self.relu1 = nn.BatchNorm2d(c), nn.ReLU()
        self.conv1 = nn.Conv2d(c, bn * growth, 1, bias=False)
        self.norm2, self.relu2 = nn.BatchNorm2d(bn * growth), nn.ReLU()
        self.conv2 = nn.Conv2d(bn * growth, growth, 3, padding=1, bias=False)

    def forward(self, feats: list[torch.Tensor]) -> torch.Tensor:
        x = self.conv1(self.relu1(self.norm1(torch.cat(feats, 1))))
        return self.conv2(self.relu2(self.norm2(x)))


class DenseBlock(nn.ModuleDict):
    def __init__(self, n: int, c: int, growth: int = 32) -> None:
        super().__init__({f"denselayer{i + 1}": DenseLayer(c + i * growth, growth) for i in range(n)})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = [x]
        for layer in self.values():
            feats.append(layer(feats))
        return torch.cat(feats, 1)


class DenseNet121(nn.Module):
    """torchvision's DenseNet-121, written out (torchvision does not import here): blocks of 6, 12, 24, 16."""

    def __init__(self) -> None:
        super().__init__()
        layers: list[tuple[str, nn.Module]] = [
            ("conv0", nn.Conv2d(3, 64, 7, 2, 3, bias=False)),
            ("norm0", nn.BatchNorm2d(64)),
            ("relu0", nn.ReLU()),
            ("pool0", nn.MaxPool2d(3, 2, 1)),
        ]
        c = 64
        for i, n in enumerate((6, 12, 24, 16)):
            layers.append((f"denseblock{i + 1}", DenseBlock(n, c)))
            c += n * 32
            if i < 3:
                layers.append(
                    (
                        f"transition{i + 1}",
                        nn.Sequential(
                            nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2)
                        ),
                    )
                )
                c //= 2
        layers.append(("norm5", nn.BatchNorm2d(c)))
        self.features = nn.Sequential(OrderedDict(layers))
        self.classifier = nn.Linear(c, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.features(x))
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def llama70b(n_layers: int, use_cache: bool = False) -> Graph:
    """The Llama-3-70B config on the meta device; ``use_cache``: as the model comes, each layer's key and
    value leaving it for the ``cache`` output."""
    cfg = transformers.LlamaConfig(
        hidden_size=8192,
        intermediate_size=28672,
        num_attention_heads=64,
        num_key_value_heads=8,
        num_hidden_layers=n_layers,
        vocab_size=128256,
        rope_theta=500000.0,
        max_position_embeddings=8192,
        attn_implementation="eager",
    )
    with torch.device("meta"):
        model = transformers.LlamaModel(cfg).eval()
    ids = torch.zeros(1, 6, dtype=torch.long, device="meta")
    mask = torch.ones(1, 6, dtype=torch.long, device="meta")
    return trace_model(model, (ids,), kwargs={"attention_mask": mask, "use_cache": use_cache}).graph


def _trace(model: nn.Module, *args: torch.Tensor) -> Graph:
    return trace_model(model.eval(), args).graph


def hf_models() -> list[tuple[str, Graph]]:
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (1, 32))
    out = [
        ("GPT-2 small", _trace(transformers.GPT2Model(transformers.GPT2Config()), ids)),
        ("BERT base", _trace(transformers.BertModel(transformers.BertConfig()), ids)),
    ]
    torch.manual_seed(0)
    t5 = transformers.T5Model(transformers.T5Config())
    out.append(("T5 small", trace_model(t5.eval(), (ids,), kwargs={"decoder_input_ids": ids[:, :8]}).graph))
    return out


# ---- quality -----------------------------------------------------------------------------------
def _overlapping_pairs(boxes: np.ndarray) -> list[tuple[int, int]]:
    """Index pairs of boxes (x0, y0, x1, y1) that overlap by more than TOL, by a sweep over x."""
    order = np.argsort(boxes[:, 0], kind="stable")
    b = boxes[order]
    out = []
    for i in range(len(b)):
        hi = np.searchsorted(b[:, 0], b[i, 2] - TOL, side="left")
        cand = np.arange(i + 1, hi)
        if cand.size:
            c = b[cand]
            hit = (c[:, 1] < b[i, 3] - TOL) & (b[i, 1] < c[:, 3] - TOL) & (c[:, 0] < b[i, 2] - TOL)
            out += [(int(order[i]), int(order[j])) for j in cand[hit]]
    return out


def crossings(lay: Layout) -> int:
    """Proper intersections between polyline segments of different edges (touching or overlapping do not
    count)."""
    segs, owner = [], []
    for k, e in enumerate(lay.edges):
        for a, b in zip(e.points, e.points[1:], strict=False):
            if a != b:
                segs.append((*a, *b))
                owner.append(k)
    if not segs:
        return 0
    s = np.array(segs)
    own = np.array(owner)
    lo_x, hi_x = np.minimum(s[:, 0], s[:, 2]), np.maximum(s[:, 0], s[:, 2])
    lo_y, hi_y = np.minimum(s[:, 1], s[:, 3]), np.maximum(s[:, 1], s[:, 3])
    order = np.argsort(lo_x, kind="stable")
    s, own, lo_x, hi_x, lo_y, hi_y = s[order], own[order], lo_x[order], hi_x[order], lo_y[order], hi_y[order]
    total = 0
    for i in range(len(s)):
        hi = np.searchsorted(lo_x, hi_x[i], side="right")
        j = np.arange(i + 1, hi)
        if not j.size:
            continue
        j = j[(own[j] != own[i]) & (lo_y[j] <= hi_y[i]) & (hi_y[j] >= lo_y[i])]
        if not j.size:
            continue
        x1, y1, x2, y2 = s[i]
        q = s[j]

        def orient(ax, ay, bx, by, cx, cy):
            return np.sign((bx - ax) * (cy - ay) - (by - ay) * (cx - ax))

        d1 = orient(x1, y1, x2, y2, q[:, 0], q[:, 1])
        d2 = orient(x1, y1, x2, y2, q[:, 2], q[:, 3])
        d3 = orient(q[:, 0], q[:, 1], q[:, 2], q[:, 3], x1, y1)
        d4 = orient(q[:, 0], q[:, 1], q[:, 2], q[:, 3], x2, y2)
        total += int(np.sum((d1 * d2 < 0) & (d3 * d4 < 0)))
    return total


def quality(vg: VisibleGraph, lay: Layout) -> dict[str, float]:
    nodes = list(lay.nodes.values())
    overlaps = len(_overlapping_pairs(np.array(nodes))) if nodes else 0
    outside = 0
    for thing, box in [*lay.nodes.items(), *lay.clusters.items()]:
        p = lay.parent[thing]
        while p is not None:
            c = lay.clusters[p]
            if box[0] < c[0] - TOL or box[1] < c[1] - TOL or box[2] > c[2] + TOL or box[3] > c[3] + TOL:
                outside += 1
            p = lay.parent[p]
    siblings = 0
    kids: dict[str | None, list[str]] = {}
    for c in vg.clusters:
        kids.setdefault(c.parent, []).append(c.id)
    for group in kids.values():
        if len(group) > 1:
            siblings += len(_overlapping_pairs(np.array([lay.clusters[c] for c in group])))

    def near(p, b):
        return b[0] - 2 <= p[0] <= b[2] + 2 and b[1] - 2 <= p[1] <= b[3] + 2

    bad_ends = sum(
        1
        for e in lay.edges
        if not (near(e.points[0], lay.nodes[e.src]) and near(e.points[-1], lay.nodes[e.dst]))
    )
    return {
        "overlaps": overlaps,
        "outside": outside,
        "siblings": siblings,
        "bad_ends": bad_ends,
        "crossings": crossings(lay),
        "area": lay.width * lay.height,
    }


# ---- timing ------------------------------------------------------------------------------------
def timed(fn: Callable[[], Layout]) -> tuple[float, Layout]:
    t0 = time.perf_counter()
    lay = fn()
    return time.perf_counter() - t0, lay


def cold(vg: VisibleGraph, method: str, timeout: float | None = None) -> tuple[float, Layout]:
    layout.clear_cache()
    return timed(lambda: layout.layout_view(vg, method=method, timeout=timeout))


def _bad(q: dict[str, float]) -> str:
    return f"{q['overlaps']:.0f} / {q['outside']:.0f} / {q['siblings']:.0f} / {q['bad_ends']:.0f}"


def compare(
    name: str, vg: VisibleGraph, repeat: int, single_timeout: float, baseline_timeout: float | None = None
) -> str:
    comp_t, single_t = [], []
    comp = single = None
    for _ in range(repeat):
        t, comp = cold(vg, "composed")
        comp_t.append(t)
        if single_t and single_t[-1] == float("inf"):
            continue  # stopped once: not again
        try:
            t, single = cold(vg, "single", single_timeout)
            single_t.append(t)
        except layout.GraphvizError:
            single = None
            single_t.append(float("inf"))
    assert comp is not None
    qc = quality(vg, comp)
    c_s = statistics.median(comp_t)
    s_s = statistics.median(single_t)
    head = f"| {name} | {len(vg.nodes)} / {len(vg.edges)} / {len(vg.clusters)} | {c_s:.2f} | "
    mark = ""
    if single is None or s_s == float("inf"):
        found = _fallback_single(vg, baseline_timeout or single_timeout)
        if found is None:
            return (
                head
                + f"over {single_timeout:g} (stopped) | - | {_bad(qc)} | - | {qc['crossings']:.0f} | - | - |"
            )
        s_s, single, mark = found
    qs = quality(vg, single)
    cr = qc["crossings"] / qs["crossings"] if qs["crossings"] else float("nan")
    return (
        head + f"{s_s:.2f}{mark} | {c_s / s_s:.2f} | {_bad(qc)} | {_bad(qs)} | {qc['crossings']:.0f} vs "
        f"{qs['crossings']:.0f} | {cr:.2f} | {qc['area'] / qs['area']:.2f} |"
    )


def _fallback_single(vg: VisibleGraph, timeout: float) -> tuple[float, Layout, str] | None:
    """A single-run baseline for a view whose single run was stopped: the old way, without the invisible edges
    holding inputs on the first rank and outputs on the last ("no io ranks"); failing that, also without edge
    labels (each a node of its own on a rank of its own; the quality measures do not look at labels); then
    also without ``newrank`` ("plain": Graphviz's own cluster ranking). A drawing where an edge runs against
    the rank direction is no baseline (without newrank DenseNet-121 every op has 68 edges going up)."""
    bare = dataclasses.replace(vg, edges=tuple(dataclasses.replace(e, label="") for e in vg.edges))
    for mark, fn in (
        (" (no io ranks)", lambda: _single_without_io_ranks(vg, timeout)),
        (" (no io ranks, no labels)", lambda: _single_without_io_ranks(bare, timeout)),
        (" (plain)", lambda: _single_plain(bare, timeout)),
    ):
        try:
            t, lay = fn()
        except layout.GraphvizError:
            continue
        up = upward_edges(lay)
        if up:
            print(f"  baseline{mark} dropped: {up} edges run upwards", flush=True)
            continue
        return t, lay, mark
    return None


def upward_edges(lay: Layout) -> int:
    """Edges whose end lies above their start by more than a box height (TB): ranks gone wrong."""
    return sum(1 for e in lay.edges if e.points[-1][1] - e.points[0][1] > 50.0)


def _single_without_io_ranks(vg: VisibleGraph, timeout: float) -> tuple[float, Layout]:
    """One dot run over the whole view as before the inputs/outputs were held on the first/last rank by
    invisible edges (with them dot does not finish GPT-2 or T5 every op in minutes): a baseline that
    exists."""
    saved = layout_dot._io_ranks
    layout_dot._io_ranks = lambda *_a, **_k: None
    try:
        return cold(vg, "single", timeout)
    finally:
        layout_dot._io_ranks = saved


def _single_plain(vg: VisibleGraph, timeout: float) -> tuple[float, Layout]:
    """The single run with no io ranks and no ``newrank`` (see ``_fallback_single``)."""
    saved = dict(layout_dot.GRAPH_ATTRS)
    layout_dot.GRAPH_ATTRS.pop("newrank", None)
    try:
        return _single_without_io_ranks(vg, timeout)
    finally:
        layout_dot.GRAPH_ATTRS.clear()
        layout_dot.GRAPH_ATTRS.update(saved)


def llama_rows(repeat: int, single_timeout: float, baseline_timeout: float | None = None) -> list[str]:
    rows = []
    g8 = llama70b(8)
    vg8 = view.build_view(g8, view.make_spec(g8, depth=None, fold_repeats=False))
    rows.append(compare("Llama-3-70B config, 8 layers, every op", vg8, 1, single_timeout, baseline_timeout))
    toggles = []
    for use_cache, name in (
        (False, "Llama-3-70B config, 80 layers, every op"),
        (True, "Llama-3-70B config, 80 layers, cache on, every op"),
    ):
        g = llama70b(80, use_cache)
        spec = view.make_spec(g, depth=None, fold_repeats=False)
        vg = view.build_view(g, spec)
        closed = view.build_view(g, view.toggle(g, spec, "mod:layers.40"))
        cold_t, close_t, reopen_t = [], [], []
        for _ in range(repeat):
            t, lay = cold(vg, "composed")
            cold_t.append(t)
            close_t.append(timed(lambda c=closed: layout.layout_view(c))[0])
            # layout_view keeps no whole views: the piece cache answers the way back
            reopen_t.append(timed(lambda v=vg: layout.layout_view(v))[0])
        q = quality(vg, lay)
        rows.append(
            f"| {name} | {len(vg.nodes)} / {len(vg.edges)} / {len(vg.clusters)} | "
            f"{statistics.median(cold_t):.2f} | not run (8 layers: see above) | - | {_bad(q)} | - | "
            f"{q['crossings']:.0f} | - | - |"
        )
        opened = ""
        if use_cache:  # the click that opens the cache output: its 160 tensors leave 80 layers one by one
            cache_view = view.build_view(g, view.toggle(g, spec, "io:output:cache"))
            opened = (
                f"; opening the cache output ({len(cache_view.nodes) - len(vg.nodes) + 1} tensors) "
                f"{statistics.median(cold(cache_view, 'composed')[0] for _ in range(repeat)):.2f} s cold"
            )
        toggles.append(
            f"{name} ({len(vg.nodes):,} boxes): cold {statistics.median(cold_t):.2f} s; closing "
            f"layers.40 (a new view) {statistics.median(close_t):.3f} s; opening it again with the view "
            f"cache cleared {statistics.median(reopen_t):.3f} s{opened} (median of {repeat})."
        )
    return rows + ["", *toggles]


def moe_rows(repeat: int, stretch: bool) -> list[str]:
    """The Qwen3-MoE configs (``bench/moe_models.py``): tracing against the forward, the every-op view's cold
    layout, a click (closing one decoder layer) and its undo with the view cache cleared, the figure, and
    the drawing's extent (wrapped stacks: about as wide as tall), with the load average around each row."""
    from bench import moe_models
    from torchvista_dash.render import figure_dict

    out = ["", "## Mixture of experts, every op", ""]
    configs = [("Qwen3-MoE 48 layers x 128 experts, fused experts", moe_models.qwen3_moe_fused)]
    configs.append(("Qwen3-MoE 48 layers x 128 experts, eager experts", moe_models.qwen3_moe_eager))
    if stretch:
        configs.append(("MoE 48 layers x 256 experts, eager experts", moe_models.moe256_eager))
    for name, make in configs:
        load0 = os.getloadavg()[0]
        model, ids = make()
        fwd, tr = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            with torch.no_grad():
                model(ids)
            fwd.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            t = trace_model(model, (ids,))
            tr.append(time.perf_counter() - t0)
        g = t.graph
        spec = view.make_spec(g, depth=None, fold_repeats=False)
        vg = view.build_view(g, spec)
        closed = view.build_view(g, view.toggle(g, spec, "mod:layers.20"))
        cold_t, close_t, reopen_t, fig_t = [], [], [], []
        for _ in range(repeat):
            t_cold, lay = cold(vg, "composed", timeout=600)
            cold_t.append(t_cold)
            close_t.append(timed(lambda c=closed: layout.layout_view(c))[0])
            layout._cache.clear()  # the view cache would answer; the piece cache must
            reopen_t.append(timed(lambda v=vg: layout.layout_view(v))[0])
            t0 = time.perf_counter()
            figure_dict(g, vg, lay)
            fig_t.append(time.perf_counter() - t0)
        q = quality(vg, lay)
        ops = sum(1 for n in g.nodes if n.kind == "op")
        med = statistics.median
        out.append(
            f"- {name}: {ops:,} ops; forward {med(fwd):.3f} s, trace {med(tr):.3f} s "
            f"({med(tr) / med(fwd):.1f}x the forward); every op {len(vg.nodes):,} boxes, {len(vg.edges):,} "
            f"edges, {len(vg.clusters):,} clusters: layout cold {med(cold_t):.2f} s, closing layers.20 "
            f"{med(close_t):.3f} s, opening it again (view cache cleared) {med(reopen_t):.3f} s, figure "
            f"{med(fig_t):.2f} s; drawing {lay.width:,.0f} x {lay.height:,.0f} pt, defects {_bad(q)}, "
            f"{q['crossings']:,.0f} crossings (median of {repeat}; 1-minute load {load0:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end)."
        )
        print(out[-1], flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--single-timeout", type=float, default=60.0)
    ap.add_argument(
        "--baseline-timeout",
        type=float,
        default=None,
        help="seconds for each fallback single run (default: --single-timeout)",
    )
    ap.add_argument("--moe-only", action="store_true", help="only the mixture-of-experts rows")
    ap.add_argument("--stretch", action="store_true", help="with the 256-expert eager MoE")
    args = ap.parse_args(argv)
    if args.moe_only:
        text = (
            "\n".join(
                [
                    "# Layout at any size: mixture of experts",
                    "",
                    f"Command: `{COMMAND} --moe-only"
                    f" --repeat {args.repeat}{' --stretch' if args.stretch else ''}`",
                    *moe_rows(args.repeat, args.stretch),
                ]
            )
            + "\n"
        )
        MOE_RESULTS.write_text(text, encoding="utf-8")
        print(text)
        return 0
    rows: list[str] = []
    for name in DEMOS:
        g = demo_trace(name).graph
        for vname, spec in (
            ("default", view.make_spec(g)),
            ("every op", view.make_spec(g, depth=None, fold_repeats=False)),
        ):
            rows.append(
                compare(
                    f"gallery {name}, {vname}",
                    view.build_view(g, spec),
                    args.repeat,
                    args.single_timeout,
                    args.baseline_timeout,
                )
            )
            print(rows[-1], flush=True)
    for name, g in hf_models():
        vg = view.build_view(g, view.make_spec(g, depth=None, fold_repeats=False))
        rows.append(compare(f"{name}, every op", vg, args.repeat, args.single_timeout, args.baseline_timeout))
        print(rows[-1], flush=True)
    torch.manual_seed(0)
    dense = _trace(Dense(32), torch.randn(1, 4, 8, 8))
    for vname, spec in (
        ("default", view.make_spec(dense)),
        ("every op", view.make_spec(dense, depth=None, fold_repeats=False)),
    ):
        rows.append(
            compare(
                f"32-layer dense block, {vname}",
                view.build_view(dense, spec),
                args.repeat,
                args.single_timeout,
                args.baseline_timeout,
            )
        )
        print(rows[-1], flush=True)
    torch.manual_seed(0)
    dn = _trace(DenseNet121(), torch.randn(1, 3, 64, 64))
    rows.append(
        compare(
            "DenseNet-121, every op",
            view.build_view(dn, view.make_spec(dn, depth=None, fold_repeats=False)),
            1,
            args.single_timeout,
            args.baseline_timeout,
        )
    )
    print(rows[-1], flush=True)
    rows += llama_rows(args.repeat, args.single_timeout, args.baseline_timeout)
    print(rows[-1], flush=True)
    rows += moe_rows(args.repeat, args.stretch)
    dot_version = subprocess.run([layout.find_dot(), "-V"], capture_output=True, text=True).stderr.strip()
    table = [
        "# Layout at any size: by module (composed) against one dot run (single)",
        "",
        f"Command: `{COMMAND} --repeat {args.repeat} --single-timeout {args.single_timeout:g}"
        f"{f' --baseline-timeout {args.baseline_timeout:g}' if args.baseline_timeout else ''}"
        "` (seconds, median of "
        f"{args.repeat} cold runs, every cache cleared; DenseNet-121 and Llama 8 layers: one run).",
        f"Machine: {platform.machine()}, {_cores()} cores, Python {platform.python_version()}, "
        f"{dot_version}, "
        f"torch {torch.__version__}, transformers {transformers.__version__}.",
        "",
        "Defects are counted as overlapping boxes / boxes outside their cluster / "
        "overlapping sibling clusters / "
        "edges not on their boxes (all must be 0). Crossings: proper intersections of segments of "
        "different edges."
        " Ratios are composed / single on the same view.",
        "",
        "| view | boxes / edges / clusters | composed, s | single, s | time ratio | defects composed | "
        "defects single | crossings composed vs single | crossing ratio | area ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]
    text = "\n".join(table) + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    print(text)
    return 0


def _cores() -> int:
    import os

    return os.cpu_count() or 1


if __name__ == "__main__":
    sys.exit(main())
