"""A server in its own process for tests and benchmarks: ``python -m torchvista_dash serve`` (or ``diff``, or
any script that prints the same line), started and waited for until it prints the URL it listens on.

One reader of that line for every test and bench (``tests/support_app.py`` re-exports ``served_url``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def served_url(proc: subprocess.Popen[str], timeout: float = 90) -> str:
    """The URL a ``python -m torchvista_dash serve`` (or ``diff``) process prints once it listens; its stdout
    piped as text. A process that exits first fails with what it wrote to stderr (when that is piped)."""
    deadline = time.time() + timeout
    assert proc.stdout is not None
    while time.time() < deadline:
        line = proc.stdout.readline()
        if "serving on " in line:
            return line.split("serving on ")[1].split()[0]
        if proc.poll() is not None:
            raise AssertionError(
                f"the server exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}"
            )
    raise AssertionError("the server never printed its URL")


def spawn(args: list[str], cwd: Path, timeout: float = 120) -> tuple[subprocess.Popen[str], str]:
    """Start ``python ARGS`` in ``cwd`` with this checkout importable; return the process and its URL.

    Its stderr goes to a file, not a pipe: a server under load logs every request there, and a pipe nobody
    reads would fill and stall it. If it never prints its URL it is killed and the error quotes that file."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=err, text=True
        )
        try:
            return proc, served_url(proc, timeout)
        except AssertionError as exc:
            proc.kill()
            proc.wait(timeout=10)
            err.seek(0)
            raise RuntimeError(f"{args} never printed its URL ({exc}): {err.read()[-2000:]}") from None
