"""Trace A/B: did a change make tracing slower? trace/forward ratios of two checkouts, interleaved.

Command (from the repository root):
    .venv/bin/python bench/bench_trace_ab.py OLD_DIR NEW_DIR [--rounds 3] [--repeat 15] [--no-flops]
    [--one-process]

OLD_DIR and NEW_DIR are checkouts of this repository (e.g. ``git archive <commit> | tar -x -C DIR``).
Each round runs one subprocess per checkout, alternating, on GPT-2 small and BERT base (bench_trace's
models and inputs); each subprocess times the plain forward pass and the trace back to back, alternating
which goes first, with one torch thread and CPU time (``time.process_time``), which a loaded shared machine
disturbs far less than wall time. The table gives, per checkout, the median over rounds of each round's
median of paired trace/forward ratios. ``--no-flops`` traces with ``flops=False`` (the recorder alone).
``--one-process`` imports both checkouts into one process (each package copied under its own name to a
temporary directory) and, in each repetition, times the forward, the old trace and the new trace back to back
in alternating order: load that drifts between subprocesses (a shared machine) cancels out of the paired
figures, which are given beside the medians (new minus old per repetition, in ms).
Prints the table; writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# what both child scripts start with: argv = checkout(s), bench dir, repeats, "1" for no FLOPs
_HEAD = r"""
import json, statistics, sys, time, warnings
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
warnings.filterwarnings("ignore")
import torch
torch.set_num_threads(1)
from bench_trace import build
"""
_EACH_MODEL = r"""
opts = {"flops": False} if sys.argv[4] == "1" else {}
out = {}
for name in ("GPT-2 small", "BERT base"):
    model, ids, kw = build(name)
    def fwd():
        with torch.no_grad():
            model(ids, **kw)
"""

_CHILD = (
    _HEAD
    + r"""
from torchvista_dash import trace_model
"""
    + _EACH_MODEL
    + r"""    def tr():
        trace_model(model, (ids,), kwargs=kw, **opts)
    for f in (fwd, tr, fwd, tr):
        f()
    F, T = [], []
    for i in range(int(sys.argv[3])):
        for f, acc in (((fwd, F), (tr, T)) if i % 2 == 0 else ((tr, T), (fwd, F))):
            t0 = time.process_time()
            f()
            acc.append(time.process_time() - t0)
    out[name] = statistics.median(t / f for t, f in zip(T, F))
print(json.dumps(out))
"""
)


def run(checkout: Path, repeat: int, no_flops: bool) -> dict[str, float]:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILD,
            str(checkout),
            str(ROOT / "bench"),
            str(repeat),
            "1" if no_flops else "0",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


_ONE = (
    _HEAD
    + r"""
import importlib
old, new = importlib.import_module("tvd_old"), importlib.import_module("tvd_new")
"""
    + _EACH_MODEL
    + r"""    runs = {"fwd": fwd, "old": lambda: old.trace_model(model, (ids,), kwargs=kw, **opts),
            "new": lambda: new.trace_model(model, (ids,), kwargs=kw, **opts)}
    for f in (*runs.values(), *runs.values()):
        f()
    T = {k: [] for k in runs}
    order = list(runs)
    for i in range(int(sys.argv[3])):
        for k in (order if i % 2 == 0 else order[::-1]):
            t0 = time.process_time()
            runs[k]()
            T[k].append(time.process_time() - t0)
    out[name] = {k: statistics.median(t / f for t, f in zip(T[k], T["fwd"])) for k in ("old", "new")}
    out[name]["diff_ms"] = statistics.median((b - a) * 1000 for a, b in zip(T["old"], T["new"]))
print(json.dumps(out))
"""
)


def one_process(old: Path, new: Path, rounds: int, repeat: int, no_flops: bool) -> None:
    """Both checkouts in one process per round (see the module docstring)."""
    ratios: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, root in (("tvd_old", old), ("tvd_new", new)):
            shutil.copytree(
                root / "torchvista_dash", Path(tmp) / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        for _ in range(rounds):
            proc = subprocess.run(
                [sys.executable, "-c", _ONE, tmp, str(ROOT / "bench"), str(repeat), "1" if no_flops else "0"],
                capture_output=True,
                text=True,
                timeout=3600,
                check=True,
            )
            for model, r in json.loads(proc.stdout.strip().splitlines()[-1]).items():
                for k, v in r.items():
                    ratios.setdefault(model, {}).setdefault(k, []).append(v)
    print(
        "| model | old trace/forward | new trace/forward | new − old per repetition (ms, paired) | "
        "rounds (old; new) |"
    )
    print("|---|---:|---:|---:|---|")
    for model, r in ratios.items():
        print(
            f"| {model} | {statistics.median(r['old']):.2f}× | {statistics.median(r['new']):.2f}× | "
            f"{statistics.median(r['diff_ms']):+.1f} | {', '.join(f'{x:.2f}' for x in r['old'])}; "
            f"{', '.join(f'{x:.2f}' for x in r['new'])} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--no-flops", action="store_true")
    ap.add_argument(
        "--one-process", action="store_true", help="both checkouts in one process, paired per run"
    )
    opts = ap.parse_args()
    print(f"1-minute load average {os.getloadavg()[0]:.1f} before")
    if opts.one_process:
        one_process(opts.old.resolve(), opts.new.resolve(), opts.rounds, opts.repeat, opts.no_flops)
        print(f"1-minute load average {os.getloadavg()[0]:.1f} after")
        return
    ratios: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    for _ in range(opts.rounds):
        for key, path in (("old", opts.old), ("new", opts.new)):
            for model, r in run(path, opts.repeat, opts.no_flops).items():
                ratios[key].setdefault(model, []).append(r)
    print("| model | old trace/forward | new trace/forward | rounds (old; new) |")
    print("|---|---:|---:|---|")
    for model in ratios["old"]:
        old, new = ratios["old"][model], ratios["new"][model]
        print(
            f"| {model} | {statistics.median(old):.2f}× | {statistics.median(new):.2f}× | "
            f"{', '.join(f'{r:.2f}' for r in old)}; {', '.join(f'{r:.2f}' for r in new)} |"
        )
    print(f"1-minute load average {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
