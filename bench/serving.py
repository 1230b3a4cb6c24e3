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


class RedisServer:
    """A throwaway ``redis-server`` on a free port (no persistence), stopped by its pid: the shared store of
    the team-server benchmarks (bench_load.py --team, --soak)."""

    def __init__(self, maxmemory: str = "512mb") -> None:
        import shutil
        import socket

        exe = shutil.which("redis-server")
        if exe is None:
            raise RuntimeError("redis-server is not installed (make system installs it)")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            + ["--maxmemory", maxmemory, "--maxmemory-policy", "volatile-lru"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
