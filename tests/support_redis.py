"""A real redis-server for the tests of the shared store: started on a free port, stopped by its pid."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """``redis-server`` on 127.0.0.1:``port``, no persistence, in a temporary folder; ``stop``/``start``
    again on the same port (a restart loses everything: it keeps nothing on disk)."""

    def __init__(self, port: int | None = None, maxmemory: str = "64mb") -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            if os.environ.get("TVD_REQUIRE_BROWSER"):
                pytest.fail("redis-server is required in CI but missing (run `make test`, which installs it)")
            pytest.skip("redis-server not installed (make system installs it)")
        self.exe = exe
        self.port = free_port() if port is None else port
        self.maxmemory = maxmemory
        self.dir = Path(tempfile.mkdtemp(prefix="tvd-redis-"))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen(
            [
                self.exe,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.dir),
                "--maxmemory", self.maxmemory,
                "--maxmemory-policy", "volatile-lru",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
