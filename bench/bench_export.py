"""Reading a saved torch.export program: ``load_trace("model.pt2")`` against ``torch.export.load`` itself, and
the every-op view of an exported model against the same view of its live trace.

Command (from the repository root):
    .venv/bin/python bench/bench_export.py [--repeat 3] [--models gpt2-small,llama-32]

Models (random weights from a config, nothing downloaded; exported with ``use_cache=False``, since
torch.export cannot return transformers' DynamicCache):
  - gpt2-small: GPT-2 small's own config (12 layers, 768 wide, 124M parameters);
  - llama-32: a Llama-style decoder with 32 layers, 512 wide (grouped-query attention, SwiGLU), 126M.
Each is exported once and saved to a temporary ``.pt2``. Then, in one process, alternating, ``repeat``
times: ``torch.export.load(path)`` (the floor: what any reader of the file pays) and ``load_trace(path)``
(the same load, the archive's safety checks, the Graph built with shapes, module calls and FLOPs), and what
load_trace adds measured on its own (checks + Graph from the loaded program). The target: load_trace ≤ 1.25
× torch.export.load.
Hugging Face models skip building an attention mask at run time when nothing is padded; an exported
program cannot look at values and always builds it, so its every-op view has those ops too. ``--padded``
passes a padded mask, so both take the same path (like for like).
Every-op view (``depth=None``, repeats folded as the app opens it, and unfolded): the time to build the
view, lay it out and build the figure, each in a fresh process (no layout cache shared), for the exported
program's trace and for the live trace of the same model and inputs (saved as JSON; torch imported in both
processes, as it is where a live trace is made). Wall seconds, medians; the machine's
load average is printed beside them (a shared machine: read ratios, not absolute times).
Writes bench/results/export_last.md (export_last_padded.md) and prints it.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results" / "export_last.md"  # export_last_padded.md with --padded
SEQ = 32


def build(name: str) -> tuple[Any, Any]:
    """The model, and its keyword inputs."""
    import torch
    import transformers

    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (1, SEQ), generator=torch.Generator().manual_seed(0))
    if name == "gpt2-small":
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config()).eval()
    elif name == "llama-32":
        cfg = transformers.LlamaConfig(
            vocab_size=32000,
            hidden_size=512,
            intermediate_size=1376,
            num_hidden_layers=32,
            num_attention_heads=8,
            num_key_value_heads=4,
            max_position_embeddings=256,
        )
        model = transformers.LlamaForCausalLM(cfg).eval()
    else:
        raise SystemExit(f"unknown model {name!r}: gpt2-small or llama-32")
    return model, ids


def prepare(name: str, folder: Path, padded: bool) -> tuple[Path, Path]:
    """The model's program saved as .pt2, and its live trace saved as JSON (same model, same inputs)."""
    import torch

    from torchvista_dash import trace_model

    model, ids = build(name)
    kwargs: dict[str, Any] = {"input_ids": ids, "use_cache": False}
    if padded:  # a padded batch: the live run builds the attention mask too, as the exported program does
        mask = torch.ones_like(ids)
        mask[:, :2] = 0
        kwargs["attention_mask"] = mask
    program = folder / f"{name}.pt2"
    live = folder / f"{name}.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(model, (), kwargs)
        torch.export.save(ep, program)
        trace_model(model, kwargs).save(live)
    return program, live


def time_loads(program: Path, repeat: int) -> tuple[list[float], list[float], list[float]]:
    """torch.export.load, load_trace, and what load_trace adds measured on its own (the archive's checks and
    the Graph built from the loaded program): on a shared machine the difference of the first two is
    mostly noise, the third is not."""
    import zipfile

    import torch

    from torchvista_dash import from_exported, load_trace
    from torchvista_dash.frontends.export.load import _pickled_records

    floor: list[float] = []
    ours: list[float] = []
    added: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.export.load(program)  # warm-up: first-call imports are no one's cost
        for k in range(repeat):
            for which in ("floor", "ours") if k % 2 == 0 else ("ours", "floor"):  # neither always goes first
                gc.collect()
                t0 = time.perf_counter()
                if which == "floor":
                    ep = torch.export.load(program)
                    floor.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    with zipfile.ZipFile(program) as z:
                        _pickled_records(z, z.namelist())
                    from_exported(ep)
                    added.append(time.perf_counter() - t0)
                    del ep
                else:
                    load_trace(program)
                    ours.append(time.perf_counter() - t0)
    return floor, ours, added


VIEW_SCRIPT = """
import sys, time, warnings
sys.path.insert(0, {root!r})
warnings.simplefilter("ignore")
import torch  # in both processes: a live trace's user has torch loaded (its import alone slows what follows)
import transformers.modeling_outputs  # registers the output types (CausalLMOutput...) a program returns
from torchvista_dash import load_trace
t = load_trace({path!r})
t0 = time.perf_counter()
t.figure(depth=None, fold_repeats={fold})
print(time.perf_counter() - t0)
"""


def time_view(path: Path, fold: bool, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        code = VIEW_SCRIPT.format(root=str(ROOT), path=str(path), fold=fold)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"the view of {path.name} failed:\n{out.stderr[-3000:]}")
        runs.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--models", default="gpt2-small,llama-32")
    ap.add_argument(
        "--padded",
        action="store_true",
        help="pass an attention mask with padding, so the live run takes the exported program's path",
    )
    ns = ap.parse_args()
    lines = [
        "# Reading saved torch.export programs",
        "",
        f"Command: `.venv/bin/python bench/bench_export.py --repeat {ns.repeat} --models {ns.models}"
        + (" --padded`" if ns.padded else "`"),
        f"Load average at start: {os.getloadavg()[0]:.1f} (2 cores, shared)",
        "",
        "| model | ops | torch.export.load | load_trace(.pt2) | ratio | added by load_trace alone "
        "| every-op view, folded: exported / live | unfolded: exported / live |",
        "|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name in ns.models.split(","):
            program, live = prepare(name, Path(tmp), ns.padded)
            floor, ours, added = time_loads(program, ns.repeat)
            f, o, a = statistics.median(floor), statistics.median(ours), statistics.median(added)
            print(f"{name}: torch.export.load {floor}, load_trace {ours}, added {added}", flush=True)
            from torchvista_dash import load_trace

            ops = load_trace(program).graph.op_count
            folded = (time_view(program, True, ns.repeat), time_view(live, True, ns.repeat))
            unfolded = (time_view(program, False, ns.repeat), time_view(live, False, ns.repeat))
            lines.append(
                f"| {name} | {ops:,} | {f:.2f} s | {o:.2f} s | {o / f:.2f}× | {a:.2f} s ({a / f:.0%}) "
                f"| {folded[0]:.2f} s / {folded[1]:.2f} s ({folded[0] / folded[1]:.2f}×) "
                f"| {unfolded[0]:.2f} s / {unfolded[1]:.2f} s ({unfolded[0] / unfolded[1]:.2f}×) |"
            )
            print(lines[-1], flush=True)
    lines += ["", f"Load average at end: {os.getloadavg()[0]:.1f}"]
    out = RESULTS.with_name("export_last_padded.md") if ns.padded else RESULTS
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
