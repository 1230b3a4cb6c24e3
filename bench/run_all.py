"""Run every benchmark in one go (``make bench``); each writes its table to bench/results/<name>.md.

They run one after another, not in parallel: the machines have two cores and the benchmarks
time ratios against peers measured in the same run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = [
    ("trace", ["bench_trace.py", "--peers"]),
    ("layout", ["bench_layout.py"]),
    ("render", ["bench_render.py"]),
    ("app", ["bench_app.py"]),
    ("vs_torchvista", ["bench_vs_torchvista.py"]),
    ("dash_floor", ["bench_dash_floor.py"]),
    ("zoom_parts", ["bench_zoom_parts.py"]),
    ("figure_build", ["bench_figure_build.py"]),
    ("diff", ["bench_diff.py"]),
    ("load", ["bench_load.py"]),
    ("trace_file", ["bench_trace_file.py"]),
    ("layout_scale", ["bench_layout_scale.py"]),
    ("export", ["bench_export.py"]),
]
# not run here: bench_trace_ab.py compares two checkouts given on its command line


def main() -> int:
    failed = []
    for name, (script, *args) in BENCHMARKS:
        print(f"== {name}: python bench/{script} {' '.join(args)}", flush=True)
        rc = subprocess.call([sys.executable, str(HERE / script), *args], cwd=HERE.parent)
        if rc != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    print("tables written to bench/results/*.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
