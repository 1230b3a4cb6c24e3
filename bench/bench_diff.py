"""Diff benchmark: ``compare`` of two GPT-2 small traces (12 vs 13 layers, and the model against itself).

Command (from the repository root):
    .venv/bin/python bench/bench_diff.py [--repeat 11]

Both traces are saved and loaded back first (what ``python -m torchvista_dash diff a.json b.json`` does), then
each repetition times ``compare(a, b).summary()`` plus the merged graph the picture is drawn from, on fresh
Graph objects (nothing cached from the previous repetition). Target: under 0.5 s. The first figure of the diff
(view, layout, render) is timed once beside it, for scale. Writes bench/results/diff.md and prints it.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from torchvista_dash import compare, load_trace, trace_model  # noqa: E402
from torchvista_dash.model.graph import Graph  # noqa: E402

TOKENS = 32


def _gpt2(n_layer: int, folder: Path) -> Path:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(n_layer=n_layer)).eval()
    ids = torch.randint(0, 1000, (1, TOKENS), generator=torch.Generator().manual_seed(0))
    return trace_model(model, (ids,), kwargs={"use_cache": False}).save(folder / f"gpt2_{n_layer}.json")


def _time_diff(pa: Path, pb: Path, repeat: int) -> tuple[list[float], int, int]:
    raw_a, raw_b = pa.read_bytes(), pb.read_bytes()
    times = []
    nodes = calls = 0
    for _ in range(repeat):
        a, b = Graph.from_json(raw_a), Graph.from_json(raw_b)  # fresh objects: no cached analysis
        t0 = time.perf_counter()
        d = compare(a, b)
        d.summary()
        merged = d.trace.graph
        times.append(time.perf_counter() - t0)
        nodes, calls = len(merged.nodes), len(merged.module_calls)
    return times, nodes, calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=11)
    opts = ap.parse_args()
    warnings.filterwarnings("ignore")
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        p12, p13 = _gpt2(12, folder), _gpt2(13, folder)
        rows = []
        for label, (pa, pb) in (
            ("GPT-2 small, 12 vs 13 layers", (p12, p13)),
            ("GPT-2 small against itself", (p12, p12)),
        ):
            times, nodes, calls = _time_diff(pa, pb, opts.repeat)
            d = compare(load_trace(pa), load_trace(pb))
            t0 = time.perf_counter()
            d.figure()
            first_figure = time.perf_counter() - t0
            s = d.summary()
            rows.append(
                (
                    label,
                    nodes,
                    calls,
                    statistics.median(times) * 1000,
                    max(times) * 1000,
                    first_figure * 1000,
                    len(s["added"]),
                    len(s["changed"]),
                )
            )
    load_after = os.getloadavg()[0]
    cmd = (
        "`.venv/bin/python bench/bench_diff.py"
        + (f" --repeat {opts.repeat}" if opts.repeat != 11 else "")
        + "`"
    )
    lines = [
        "# Diff benchmark",
        "",
        f"Command: {cmd} (from the repository root)",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, torch {torch.__version__}. "
        "GPT-2 small "
        f"(GPT2Config defaults), random weights, {TOKENS} tokens, traces saved and loaded back; median of "
        f"{opts.repeat} runs of compare + summary + merged graph on fresh graphs. Target: under 0.5 s.",
        f"1-minute load average {load_before:.1f} before and {load_after:.1f} after.",
        "",
        "| traces | merged nodes | merged module calls | compare (ms, median) | compare (ms, slowest) | "
        "first diff figure (ms, once) | added | changed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, nodes, calls, med, worst, fig, added, changed in rows:
        lines.append(
            f"| {label} | {nodes} | {calls} | {med:.1f} | {worst:.1f} | {fig:.0f} | {added} | {changed} |"
        )
    text = "\n".join(lines) + "\n"
    out = ROOT / "bench" / "results" / "diff.md"
    out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
