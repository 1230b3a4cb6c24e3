"""The benchmark runner: ``make bench`` runs every benchmark script there is."""

from __future__ import annotations

from pathlib import Path

from bench.run_all import BENCHMARKS

BENCH = Path(__file__).resolve().parent.parent / "bench"


def test_run_all_runs_every_benchmark_script_but_the_two_checkout_ab() -> None:
    listed = {script for _, (script, *_args) in BENCHMARKS}
    scripts = {p.name for p in BENCH.glob("bench_*.py")} - {"bench_trace_ab.py"}
    assert listed == scripts
    assert all((BENCH / s).is_file() for s in listed)
