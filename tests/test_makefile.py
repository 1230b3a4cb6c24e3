"""The Makefile's set-up, read with ``make -n`` (print, never run) in a copy: TORCH_INDEX points pip at
another torch wheel index for torch alone."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _dry_run(tmp_path: Path, *args: str) -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    for name in ("Makefile", "requirements-dev.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    proc = subprocess.run(
        ["make", "-n", "-C", str(tmp_path), ".venv/.installed", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return [ln for ln in proc.stdout.splitlines() if "pip install" in ln]


def test_torch_index_installs_the_pinned_torch_from_that_index_first(tmp_path: Path) -> None:
    pin = next(
        ln for ln in (ROOT / "requirements-dev.txt").read_text().splitlines() if ln.startswith("torch==")
    )
    lines = _dry_run(tmp_path, "TORCH_INDEX=http://127.0.0.1:9/whl/cpu")
    assert lines[0] == f'.venv/bin/pip install -q --index-url "http://127.0.0.1:9/whl/cpu" "{pin}"'
    assert lines[1] == ".venv/bin/pip install -q -r requirements-dev.txt"


def test_without_torch_index_pip_uses_its_default(tmp_path: Path) -> None:
    lines = _dry_run(tmp_path)
    assert lines[0] == ".venv/bin/pip install -q -r requirements-dev.txt" and not any(
        "--index-url" in ln for ln in lines
    )
