"""Running Graphviz ``dot``: found on PATH (or ``$TVD_DOT``), killed when it overruns its time budget."""

from __future__ import annotations

import os
import shutil
import subprocess

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


def run_dot(source: str | bytes, fmt: str = "json", timeout: float | None = None) -> bytes:
    """Run ``dot -T<fmt>`` on DOT ``source`` and return its output.

    Past ``timeout`` seconds (default ``DEFAULT_TIMEOUT``) the process is killed and GraphvizError raised,
    so a huge graph never hangs the caller.
    """
    exe = find_dot()
    data = source.encode("utf-8") if isinstance(source, str) else source
    budget = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    try:
        proc = subprocess.run([exe, f"-T{fmt}"], input=data, capture_output=True, timeout=budget, check=False)
    except subprocess.TimeoutExpired:   # subprocess.run has already killed and reaped the process
        raise GraphvizError(
            f"Graphviz dot ran past its time budget of {budget:g} s and was stopped. Collapse some modules, "
            f"lower the node budget, or raise the timeout (layout_view(..., timeout=...) or $TVD_DOT_TIMEOUT)."
        ) from None
    except FileNotFoundError:
        raise GraphvizNotFound(f"Graphviz `dot` at {exe} could not be started. {INSTALL_HINT}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise GraphvizError(f"Graphviz dot failed (exit code {proc.returncode}): {err[:2000]}")
    return proc.stdout
