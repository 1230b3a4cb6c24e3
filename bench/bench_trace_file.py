"""Loading a big saved trace: ``load_trace`` and the trace id against the bare JSON parse of the same file.

Command (from the repository root):
    .venv/bin/python bench/bench_trace_file.py [--nodes 200000] [--repeat 3] [--code OTHER_CHECKOUT]

A synthetic trace (no torch needed): a root with 10 stages, each a chain of identical blocks of 10 ops (a
Linear call with its weight and bias, then 8 ops), every op with a source line, an argument and an output,
so the file is shaped like a real one (~400 bytes a node). Each measurement runs in a fresh process (so
peak memory, VmHWM, is that process's own) and the table gives the median wall time:
  - floor: ``orjson.loads`` of the file's bytes, nothing else (what any JSON reader must pay);
  - load: ``load_trace(path)`` (parse, build the dataclasses, validate);
  - id: ``trace.id`` (the content hash that keys the server registry) right after loading;
  - id, traced: ``trace.id`` of the same graph built in memory, as ``trace_model`` returns it;
  - ModelGraph: the Dash component for the loaded trace (first view laid out and drawn; depth 1 is small).
Times are the process's own CPU seconds (``time.process_time``: robust to the other load on a shared machine;
``dot`` runs in a child process, so ModelGraph's layout is not in its CPU figure), wall seconds beside them.
Writes bench/results/trace_file_last.md and prints it (bench/results/trace_file.md holds a before/after pair).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "trace_file_last.md"  # trace_file.md: a before/after pair of runs
COMMAND = ".venv/bin/python bench/bench_trace_file.py"
STAGES = 10
OPS_PER_BLOCK = 10


def synthetic(nodes: int) -> object:
    """A valid Graph with about ``nodes`` nodes (see the module docstring)."""
    from torchvista_dash.model.graph import Edge, Graph, ModuleCall, Node, ParamInfo, TensorMeta, call_id_for

    m = TensorMeta((1, 32, 768), "float32", "cpu", 98304)
    w = TensorMeta((768, 768), "float32", "cpu", 2359296)
    b = TensorMeta((768,), "float32", "cpu", 3072)
    blocks = max(1, nodes // (STAGES * OPS_PER_BLOCK))
    calls = [ModuleCall(call_id_for("", 0), "", "Net", None)]
    out_nodes: list[Node] = [Node("n:0", "input", "x", None, outputs=(m,))]
    edges: list[Edge] = []
    prev = "n:0"

    def node(kind: str, name: str, parent: str, inputs: list[str], meta: TensorMeta) -> str:
        nid = f"n:{len(out_nodes)}"
        out_nodes.append(
            Node(
                nid,
                kind,
                name,
                parent,
                args=(("dim", "-1"),),
                source="model.py:42 in forward",
                outputs=(meta,),
            )
        )
        for i, s in enumerate(inputs):
            edges.append(Edge(s, nid, f"{s}/0", out_nodes[int(s[2:])].outputs[0], dst_arg=i))
        return nid

    for s in range(STAGES):
        sq = f"stages.{s}"
        scid = call_id_for(sq, 0)
        calls.append(ModuleCall(scid, sq, "Stage", calls[0].id, depth=1))
        for k in range(blocks):
            bq = f"{sq}.blocks.{k}"
            bcid = call_id_for(bq, 0)
            calls.append(ModuleCall(bcid, bq, "Block", scid, depth=2))
            lq = f"{bq}.fc"
            lcid = call_id_for(lq, 0)
            calls.append(
                ModuleCall(
                    lcid,
                    lq,
                    "Linear",
                    bcid,
                    num_params=768 * 769,
                    depth=3,
                    builtin=True,
                    params=(
                        ParamInfo("weight", w.shape, "float32", True),
                        ParamInfo("bias", b.shape, "float32", True),
                    ),
                    extra_repr="in_features=768, out_features=768, bias=True",
                )
            )
            pw = node("parameter", f"{lq}.weight", lcid, [], w)
            pb = node("parameter", f"{lq}.bias", lcid, [], b)
            h = node("op", "linear", lcid, [prev, pw, pb], m)
            for j in range(OPS_PER_BLOCK - 3):
                h = node("op", "gelu" if j % 2 else "__add__", bcid, [h, prev] if j % 2 == 0 else [h], m)
            prev = h
    node("output", "output", None, [prev], m)  # type: ignore[arg-type]
    return Graph(
        tuple(out_nodes),
        tuple(edges),
        tuple(calls),
        model_name="Synthetic",
        versions=(("torchvista_dash", "bench"),),
    )


# step → (setup, timed statement); only the statement is timed
STEPS = {
    "floor": ("import orjson", "orjson.loads(open(P, 'rb').read())"),
    "load": ("from torchvista_dash import load_trace", "t = load_trace(P)"),
    "id": ("from torchvista_dash import load_trace; t = load_trace(P)", "t.id"),
    "id, traced": (
        "from bench_trace_file import synthetic; from torchvista_dash import Trace; t = Trace(synthetic(N))",
        "t.id",
    ),
    "ModelGraph": (
        "from torchvista_dash import load_trace; "
        "from torchvista_dash.app.component.component import ModelGraph; "
        "t = load_trace(P)",
        "ModelGraph(t)",
    ),
}
_CHILD = """
import re, sys, time
sys.path[:0] = [{root!r}, {bench!r}]
P, N = {path!r}, {nodes}
{setup}
T0, C0 = time.perf_counter(), time.process_time()
{step}
dt, cpu = time.perf_counter() - T0, time.process_time() - C0
print(dt, cpu, re.search(r"VmHWM:\\s*(\\d+)", open("/proc/self/status").read()).group(1))
"""


def run_step(step: str, path: Path, nodes: int, code_root: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one step in a fresh interpreter using the package at
    ``code_root``."""
    env = dict(os.environ, TVD_MAX_TRACE_BYTES=str(10**12))
    src = _CHILD.format(
        root=str(code_root),
        bench=str(ROOT / "bench"),
        path=str(path),
        nodes=nodes,
        setup=STEPS[step][0],
        step=STEPS[step][1],
    )
    out = subprocess.run(
        [sys.executable, "-c", src], capture_output=True, text=True, env=env, cwd=code_root, timeout=900
    )
    if out.returncode != 0:
        raise RuntimeError(f"{step} failed:\n{out.stderr[-2000:]}")
    dt, cpu, rss = out.stdout.split()[-3:]
    return float(dt), float(cpu), int(rss) / 1024


def bench(nodes: int, repeat: int, code_root: Path, label: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.json"
        g = synthetic(nodes)
        g.save(path)  # type: ignore[attr-defined]
        n_nodes, n_calls = len(g.nodes), len(g.module_calls)  # type: ignore[attr-defined]
        del g
        size_mb = path.stat().st_size / 1e6
        rows = []
        times: dict[str, float] = {}
        for step in STEPS:
            runs = [run_step(step, path, nodes, code_root) for _ in range(repeat)]
            times[step] = statistics.median(r[1] for r in runs)
            rows.append((step, times[step], statistics.median(r[0] for r in runs), max(r[2] for r in runs)))
    load1 = os.getloadavg()[0]
    lines = [
        "# Loading a big trace file",
        "",
        f"Command: `{COMMAND} --nodes {nodes} --repeat {repeat}"
        + ("" if label == "this checkout" else f" --code {label}")
        + "` (from the repository root)",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, "
        f"1-minute load average {load1:.1f} "
        f"(a shared machine). Synthetic trace: {n_nodes:,} nodes, {n_calls:,} module calls, "
        f"{size_mb:.0f} MB; "
        f"median of {repeat} runs, each step in a fresh process.",
        "",
        "| step | CPU seconds (median) | × floor | wall seconds (median) | peak RSS of the process (MB) |",
        "|---|---:|---:|---:|---:|",
    ]
    for step, cpu, wall, rss in rows:
        lines.append(f"| {step} | {cpu:.2f} | {cpu / times['floor']:.2f}× | {wall:.2f} | {rss:,.0f} |")
    lines.append("")
    lines.append(
        f"CPU: the id costs {times['id'] / times['load']:.0%} of the load and "
        f"{times['id'] / times['ModelGraph']:.0%} of ModelGraph's {times['ModelGraph']:.2f} s."
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--code", type=Path, default=ROOT, help="package checkout to measure (default: this one)")
    ap.add_argument("--no-write", action="store_true", help="print only (e.g. measuring an older checkout)")
    ns = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    label = "this checkout" if ns.code == ROOT else str(ns.code)
    table = bench(ns.nodes, ns.repeat, ns.code.resolve(), label)
    print(table)
    if not ns.no_write:
        RESULTS.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
