"""Trace benchmark: trace_model time as a ratio of the plain ``torch.no_grad()`` forward pass.

Command (from the repository root):
    .venv/bin/python bench/bench_trace.py [--repeat 21] [--peers]

GPT-2 small (GPT2Config() defaults: 12 layers, 768 wide) and BERT base (BertConfig() defaults), random
weights, batch 1, 32 tokens, CPU. The trace records each op's FLOPs (the default); "trace without FLOPs"
(``flops=False``) is the tracer without that, measured in the same run. What FLOP measuring learns is kept for
the process (frontends/trace/cost.py), so repeated traces measure nothing anew; "first trace" clears that
before each trace (what the first trace in a fresh process pays). In one run, each repetition times the plain
forward pass and the trace back to back (alternating which goes first), so both see the same machine state;
the table gives the medians, the median of the per-repetition ratios (robust to load that drifts during the
run) and the ratio of the fastest runs (the least disturbed ones). ``--peers`` adds torchview's ``draw_graph``
(graph building only, no rendering) on the same model and input as a peer ratio. Writes bench/results/trace.md
and prints it.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from torchvista_dash import trace_model  # noqa: E402
from torchvista_dash.frontends.trace.cost import _LEARNED  # noqa: E402

TOKENS = 32


def build(name: str) -> tuple[torch.nn.Module, torch.Tensor, dict[str, Any]]:
    """The model from its default config (random weights), 1x32 token ids, and the forward's kwargs."""
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (1, TOKENS), generator=torch.Generator().manual_seed(0))
    if name == "GPT-2 small":
        from transformers import GPT2Config, GPT2Model

        return GPT2Model(GPT2Config()).eval(), ids, {"use_cache": False}
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig()).eval(), ids, {"attention_mask": torch.ones(1, TOKENS, dtype=torch.long)}


def measure(name: str, repeat: int, peers: bool) -> dict[str, Any]:
    model, ids, kwargs = build(name)

    def forward() -> None:
        with torch.no_grad():
            model(ids, **kwargs)

    def trace() -> None:
        trace_model(model, (ids,), kwargs=kwargs)

    def trace_without_flops() -> None:
        trace_model(model, (ids,), kwargs=kwargs, flops=False)

    def first_trace() -> None:
        _LEARNED.clear()
        trace_model(model, (ids,), kwargs=kwargs)

    def values_trace() -> None:
        trace_model(model, (ids,), kwargs=kwargs, values=True)

    runs: dict[str, Any] = {
        "forward": forward,
        "trace": trace,
        "no_flops": trace_without_flops,
        "first": first_trace,
        "values": values_trace,
    }
    if peers:
        from torchview import draw_graph

        def torchview_graph() -> None:
            draw_graph(model, input_data=(ids,), kwargs=kwargs, depth=3, save_graph=False)

        runs["torchview"] = torchview_graph
    for f in runs.values():  # warm-up: imports, allocator, caches
        f()
        f()
    times: dict[str, list[float]] = {k: [] for k in runs}
    order = list(runs)
    for i in range(repeat):
        for k in order if i % 2 == 0 else order[::-1]:
            t0 = time.perf_counter()
            runs[k]()
            times[k].append(time.perf_counter() - t0)
    t = trace_model(model, (ids,), kwargs=kwargs)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    paired = {
        k: statistics.median(a / f for a, f in zip(v, times["forward"], strict=True))
        for k, v in times.items()
    }
    best = {k: min(v) / min(times["forward"]) for k, v in times.items()}
    flops_cost = statistics.median(a / b for a, b in zip(times["trace"], times["no_flops"], strict=True))
    values_cost = statistics.median(a / b for a, b in zip(times["values"], times["trace"], strict=True))
    return {
        **value_queries(model, ids, kwargs),
        "values_cost": values_cost,
        "model": name,
        "ops": t.graph.op_count,
        "calls": len(t.graph.module_calls),
        "med": med,
        "paired": paired,
        "best": best,
        "flops_cost": flops_cost,
    }


def value_queries(model: torch.nn.Module, ids: torch.Tensor, kwargs: dict[str, Any]) -> dict[str, Any]:
    """A value trace's JSON size against the plain one's, and how long first_nonfinite and first_divergence
    (from scratch: every op matched and compared) take on it, best of 5."""
    from torchvista_dash.model.valuediff import ValueDiff
    from torchvista_dash.model.values import first_nonfinite

    plain = trace_model(model, (ids,), kwargs=kwargs).graph
    a = trace_model(model, (ids,), kwargs=kwargs, values=True).graph
    b = trace_model(model, (ids,), kwargs=kwargs, values=True).graph
    nonfinite, divergence = [], []
    for _ in range(5):
        for g in (a, b):
            g.__dict__.pop("_first_nonfinite", None)
            g.__dict__.pop("_tensor_values", None)
        t0 = time.perf_counter()
        first_nonfinite(a)
        t1 = time.perf_counter()
        ValueDiff(a, b).first_divergence()
        t2 = time.perf_counter()
        nonfinite.append(t1 - t0)
        divergence.append(t2 - t1)
    return {
        "json_plain": len(plain.to_bytes()),
        "json_values": len(a.to_bytes()),
        "nonfinite_ms": min(nonfinite) * 1000,
        "divergence_ms": min(divergence) * 1000,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--peers", action="store_true", help="also time torchview's draw_graph")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own choice)")
    opts = ap.parse_args()
    warnings.filterwarnings("ignore")
    if opts.threads:
        torch.set_num_threads(opts.threads)
    load_before = os.getloadavg()[0]
    rows = [measure(name, opts.repeat, opts.peers) for name in ("GPT-2 small", "BERT base")]
    load_after = os.getloadavg()[0]

    cmd = (
        "`.venv/bin/python bench/bench_trace.py"
        + (f" --repeat {opts.repeat}" if opts.repeat != 21 else "")
        + (" --peers" if opts.peers else "")
        + (f" --threads {opts.threads}" if opts.threads else "")
        + "`"
    )
    lines = [
        "# Trace benchmark",
        "",
        f"Command: {cmd} (from the repository root)",
        "",
        f"Machine: {platform.machine()}, {torch.get_num_threads()} torch threads, Python "
        f"{platform.python_version()}, torch {torch.__version__}. Batch 1, {TOKENS} tokens, CPU, random "
        f"weights; median of {opts.repeat} interleaved runs. Target: trace ≤ 1.25× forward.",
        f"1-minute load average {load_before:.1f} before and {load_after:.1f} after "
        "(a shared machine: ratios "
        f"move by a few hundredths from run to run).",
        "",
    ]
    head = (
        "| model | ops | module calls | forward (ms, median) | trace (ms, median) | trace / forward "
        "(median of paired ratios) | trace / forward (fastest runs) "
        "| trace without FLOPs / forward (paired) | "
        "trace / trace without FLOPs (paired) | first trace / forward (paired) |"
    )
    sep = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    if opts.peers:
        head += " torchview draw_graph (ms) | torchview / forward (paired) |"
        sep += "---:|---:|"
    lines += [head, sep]
    for r in rows:
        m = r["med"]
        line = (
            f"| {r['model']} | {r['ops']} | {r['calls']} | {m['forward']:.1f} | {m['trace']:.1f} | "
            f"{r['paired']['trace']:.2f}× | {r['best']['trace']:.2f}× | {r['paired']['no_flops']:.2f}× "
            f"| {r['flops_cost']:.2f}× | "
            f"{r['paired']['first']:.2f}× |"
        )
        if opts.peers:
            line += f" {m['torchview']:.1f} | {r['paired']['torchview']:.2f}× |"
        lines.append(line)
    lines += [
        "",
        "Value traces (``values=True``), same runs. Target: values trace ≤ 1.5× forward, its JSON ≤ 1.5× the "
        "plain trace's, first_nonfinite and first_divergence < 100 ms.",
        "",
        "| model | values trace (ms, median) | values / forward (paired) | values / forward (fastest runs) "
        "| values / trace (paired) | JSON plain (bytes) | JSON values (bytes) | JSON ratio "
        "| first_nonfinite (ms) | first_divergence (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['med']['values']:.1f} | {r['paired']['values']:.2f}× | "
            f"{r['best']['values']:.2f}× | {r['values_cost']:.2f}× | {r['json_plain']:,} | "
            f"{r['json_values']:,} | {r['json_values'] / r['json_plain']:.2f}× | {r['nonfinite_ms']:.1f} | "
            f"{r['divergence_ms']:.1f} |"
        )
    text = "\n".join(lines) + "\n"
    out = ROOT / "bench" / "results" / "trace.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
