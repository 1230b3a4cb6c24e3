"""Running Graphviz ``dot``: found on PATH (or ``$TVD_DOT``), killed when it overruns its time budget.

``DotRun`` starts ``dot`` before its input exists: dot spends its first few milliseconds loading its
libraries and plugins, and that start-up runs on another core while we are still writing the DOT.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from types import TracebackType

DEFAULT_TIMEOUT = float(os.environ.get("TVD_DOT_TIMEOUT", "60"))   # seconds

INSTALL_HINT = (
    "Install Graphviz: `sudo apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS), "
    "or `conda install -c conda-forge graphviz`; or point $TVD_DOT at the dot executable."
)


class GraphvizNotFound(RuntimeError):
    """The Graphviz ``dot`` program is not installed (or not on PATH)."""


class GraphvizError(RuntimeError):
    """``dot`` failed or ran past its time budget (it was killed)."""


def find_dot() -> str:
    """Path of the ``dot`` executable, or GraphvizNotFound saying how to install it."""
    explicit = os.environ.get("TVD_DOT")
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise GraphvizNotFound(f"$TVD_DOT={explicit!r} is not an executable Graphviz dot. {INSTALL_HINT}")
    path = shutil.which("dot")
    if path is None:
        raise GraphvizNotFound(f"Graphviz `dot` was not found on PATH; torchvista_dash needs it to lay out "
                               f"graphs. {INSTALL_HINT}")
    return path


class DotRun:
    """One ``dot -T<fmt>`` process, started at once and fed its DOT later with ``feed``.

    Use it as a context manager: leaving the block without a successful ``feed`` (the DOT could not be
    built) kills and reaps the process, so no dot is ever left running.
    """

    def __init__(self, fmt: str = "json", timeout: float | None = None) -> None:
        exe = find_dot()
        self.timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        try:
            self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                [exe, f"-T{fmt}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError:
            raise GraphvizNotFound(f"Graphviz `dot` at {exe} could not be started. {INSTALL_HINT}") from None

    def feed(self, source: str | bytes) -> bytes:
        """Send the DOT, wait for dot (at most ``timeout`` seconds from here) and return its output."""
        proc = self._proc
        if proc is None:
            raise RuntimeError("a DotRun is fed once")
        data = source.encode("utf-8") if isinstance(source, str) else source
        try:
            out, err = proc.communicate(data, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.close()
            raise GraphvizError(
                f"Graphviz dot ran past its time budget of {self.timeout:g} s and was stopped. Collapse some "
                f"modules, lower the node budget, or raise the timeout (layout_view(..., timeout=...) or "
                f"$TVD_DOT_TIMEOUT).") from None
        self._proc = None
        if proc.returncode != 0:
            text = err.decode("utf-8", "replace").strip()
            raise GraphvizError(f"Graphviz dot failed (exit code {proc.returncode}): {text[:2000]}")
        return out

    def close(self) -> None:
        """Kill and reap the process if it is still running (a no-op after ``feed``)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.communicate()

    def __enter__(self) -> DotRun:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def run_dot(source: str | bytes, fmt: str = "json", timeout: float | None = None) -> bytes:
    """Run ``dot -T<fmt>`` on DOT ``source`` and return its output.

    Past ``timeout`` seconds (default ``DEFAULT_TIMEOUT``) the process is killed and GraphvizError raised,
    so a huge graph never hangs the caller.
    """
    with DotRun(fmt, timeout) as run:
        return run.feed(source)
