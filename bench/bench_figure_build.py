"""What building a view's figure costs the server: plotly's validated ``go.Figure`` read back as dicts (what
the app did) against ``figure_dict``'s plain dicts (what it does), interleaved in one process, on one laid-out
view.

Command (from the repository root):
    .venv/bin/python bench/bench_figure_build.py [--model llama80] [--repeat 3]

``--model``: a model of bench_vs_torchvista.py, drawn every op and unfolded (its ``?fold_repeats=0`` view).
The layout is made once, before timing; pictures go to the app's picture store as in the app. Also what one
full garbage collection costs with the trace, its layout and figures alive, and after ``gc.freeze()`` (what
``serve`` does once it has traced). Writes the medians, whether both give the same JSON, and the load average
to bench/results/figure_build.md and prints them.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results" / "figure_build.md"  # (another --model: figure_build_<model>.md)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="llama80")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import bench.bench_vs_torchvista as bt
    import bench.moe_models as moe
    from torchvista_dash import trace_model
    from torchvista_dash.app.traces.pictures import Collector
    from torchvista_dash.render import figure_dict, make_figure

    make = getattr(bt, args.model, None) or getattr(moe, args.model)  # bench_vs_torchvista's, or moe_models'
    t = trace_model(*make())
    vg = t.view(depth=None, fold_repeats=False)
    lay = t.layout(vg)
    load0 = os.getloadavg()
    times: dict[str, list[float]] = {"go.Figure, then to_plotly_json": [], "figure_dict": []}
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        a = make_figure(t.graph, vg, lay, picture_source=Collector()).to_plotly_json()
        times["go.Figure, then to_plotly_json"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b = figure_dict(t.graph, vg, lay, picture_source=Collector())
        times["figure_dict"].append(time.perf_counter() - t0)
    same = json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    collect: dict[str, float] = {}
    for name in ("as it is", "after gc.freeze()"):
        if name != "as it is":
            gc.freeze()
        runs = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            gc.collect()
            runs.append(time.perf_counter() - t0)
        collect[name] = statistics.median(runs)
    gc.unfreeze()
    load1 = os.getloadavg()
    lines = [
        "# Building a view's figure on the server",
        "",
        f"Command: `.venv/bin/python bench/bench_figure_build.py --model {args.model} "
        f"--repeat {args.repeat}`",
        "",
        f"{args.model}, every op, unfolded: {len(vg.nodes):,} boxes; median of {args.repeat}, interleaved.",
        "",
        "| figure | seconds (median) | each |",
        "|---|---:|---|",
    ]
    lines += [
        f"| {name} | {statistics.median(v):.2f} | {', '.join(f'{x:.2f}' for x in v)} |"
        for name, v in times.items()
    ]
    lines += [
        "",
        "One full garbage collection with all that alive (median, ms): "
        + ", ".join(f"{name} {v * 1000:.0f}" for name, v in collect.items())
        + ".",
    ]
    lines += [
        "",
        f"Same JSON: {same}. 1-minute load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end "
        "(2 cores).",
        "",
    ]
    out = RESULTS if args.model == "llama80" else RESULTS.with_name(f"figure_build_{args.model}.md")
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
