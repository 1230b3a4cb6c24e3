"""Running Graphviz programs: found on PATH (or ``$TVD_DOT``), killed when they overrun their time budget,
and never more at once than the machine has cores for.

The one process runner of the package: the layout (``dot -Tjson0``) and the static export (``neato -n2``)
both start Graphviz here, under the same ``$TVD_DOT_TIMEOUT``. ``DotRun`` starts the program before its input
exists: Graphviz spends its first few milliseconds loading its libraries and plugins, and that start-up runs
on another core while we are still writing the DOT. The work is then admitted by ``slots`` (at most
``$TVD_DOT_JOBS``, default the core count, at once): small layouts pass big ones, interactive ones pass
background ones, and big ones never hold every slot.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import selectors
import shutil
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import NoReturn

from torchvista_dash.model.errors import TorchvistaDashError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

DEFAULT_TIMEOUT = 60.0  # seconds, unless $TVD_DOT_TIMEOUT says otherwise (read at each run)
TIMEOUT_ENV = "TVD_DOT_TIMEOUT"
JOBS_ENV = "TVD_DOT_JOBS"
HEAVY_BYTES = 32_000  # DOT this long is a big layout (~300 boxes; GPT-2 small's every-op view is 65 kB)
_READ_SIZE = 1 << 20
_F_SETPIPE_SZ = 1031  # Linux fcntl: a pipe's buffer size
_CAN_PUMP = os.name == "posix"  # select() on pipes and non-blocking pipe writes

INSTALL_HINT = (
    "Install Graphviz: `sudo apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS), "
    "or `conda install -c conda-forge graphviz`; or point $TVD_DOT at the dot executable."
)


class GraphvizNotFound(TorchvistaDashError, RuntimeError):
    """The Graphviz ``dot`` program is not installed (or not on PATH)."""


class GraphvizError(TorchvistaDashError, RuntimeError):
    """``dot`` failed or ran past its time budget (it was killed)."""


def timeout_seconds(timeout: float | None = None) -> float:
    """One dot run's time budget: ``timeout``, else ``$TVD_DOT_TIMEOUT``, else 60 s; checked here, when used
    (a bad setting is a clear ValueError at the first layout, not a broken import)."""
    if timeout is None:
        raw = os.environ.get(TIMEOUT_ENV, "").strip()
        if not raw:
            return DEFAULT_TIMEOUT
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise ValueError(
                f"${TIMEOUT_ENV}={raw!r} is not a number of seconds above 0 (for example 120); "
                f"unset it for the default {DEFAULT_TIMEOUT:g} s"
            )
        return value
    try:
        value = float(timeout)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"timeout must be a number of seconds above 0, not {timeout!r}")
    return value


def max_jobs() -> int:
    """How many dot runs may lay out at once: ``$TVD_DOT_JOBS``, else the number of cores."""
    raw = os.environ.get(JOBS_ENV, "").strip()
    if not raw:
        return max(1, os.cpu_count() or 1)
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"${JOBS_ENV}={raw!r} is not a positive whole number; unset it for one per core")
    return value


_background = threading.local()


@contextlib.contextmanager
def background() -> Iterator[None]:
    """Dot runs started inside this block (in this thread) wait for every interactive one: speculative
    work."""
    was = getattr(_background, "on", False)
    _background.on = True
    try:
        yield
    finally:
        _background.on = was


class Slots:
    """Admission to the cores: at most ``max_jobs()`` runs at once. Waiting runs go in order of (background,
    size, arrival), and big interactive runs (``HEAVY_BYTES`` of DOT and more) hold at most all slots but one,
    so a small layout (a click on a small model, a collapsed view) never waits behind big ones. Background
    runs also hold at most all slots but one, and do not count against the interactive runs' share: a click's
    big layout never waits for a speculative one (such as the precomputed layout of an 80-layer view's opened
    KV cache, which can take dot seconds). A run that has waited ``AGE_S`` goes before the ones that have not,
    by arrival, so a stream of small ones never starves a big one."""

    AGE_S = 2.0

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._busy = self._heavy = self._speculative = 0  # runs, big interactive runs, background runs
        self._waiting: list[tuple[bool, int, int, float]] = []  # (background, size, arrival number, since)
        self._seq = 0
        self.stats = {"runs": 0, "waited": 0, "max_busy": 0}

    def _may_go(self, ticket: tuple[bool, int, int, float], limit: int) -> bool:
        all_but_one = max(1, limit - 1)
        now = time.monotonic()

        def order(t: tuple[bool, int, int, float]) -> tuple[bool, bool, int, int]:
            fresh = now - t[3] < self.AGE_S
            return (t[0], fresh, t[1] if fresh else 0, t[2])

        for t in sorted(self._waiting, key=order):
            share = (
                self._speculative < all_but_one if t[0] else (t[1] < HEAVY_BYTES or self._heavy < all_but_one)
            )
            if self._busy < limit and share:
                return t == ticket  # the first waiter that can run now is the one to go
        return False

    @contextlib.contextmanager
    def hold(self, size: int, timeout: float) -> Iterator[None]:
        """One slot for a run of ``size`` bytes of DOT; GraphvizError after ``timeout`` s of waiting."""
        limit = max_jobs()
        speculative = bool(getattr(_background, "on", False))
        heavy = size >= HEAVY_BYTES and not speculative
        with self._cv:
            self._seq += 1
            ticket = (speculative, size, self._seq, time.monotonic())
            self._waiting.append(ticket)
            deadline = time.monotonic() + timeout
            try:
                if not self._may_go(ticket, limit):
                    self.stats["waited"] += 1
                while not self._may_go(ticket, limit):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise GraphvizError(
                            f"Graphviz is busy: {self._busy} layouts are running and "
                            f"{len(self._waiting) - 1} more "
                            f"are waiting; this one waited {timeout:g} s. Try again in a moment, or collapse "
                            f"some modules."
                        )
                    self._cv.wait(remaining)
            finally:
                self._waiting.remove(ticket)
                self._cv.notify_all()
            self._busy += 1
            self._heavy += heavy
            self._speculative += speculative
            self.stats["runs"] += 1
            self.stats["max_busy"] = max(self.stats["max_busy"], self._busy)
        try:
            yield
        finally:
            with self._cv:
                self._busy -= 1
                self._heavy -= heavy
                self._speculative -= speculative
                self._cv.notify_all()

    def busy(self) -> int:
        with self._cv:
            return self._busy


slots = Slots()


_children: weakref.WeakSet[subprocess.Popen[bytes]] = weakref.WeakSet()  # every Graphviz process started


def spawn(argv: list[str]) -> subprocess.Popen[bytes]:
    """A Graphviz process with pipes on all three streams, killed at exit if it still runs
    (``kill_children``)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _children.add(proc)
    return proc


def kill_children() -> None:
    """Kill every Graphviz process still running. At exit: a dot laying out when its server stops would
    go on, as an orphan, for as long as its layout takes."""
    for proc in list(_children):
        if proc.poll() is None:
            proc.kill()
            proc.wait()


atexit.register(kill_children)


def find_program(program: str = "dot") -> str:
    """Path of a Graphviz program (``dot``, ``neato``): the one beside ``$TVD_DOT`` when that is set, else
    on PATH; GraphvizNotFound saying how to install Graphviz otherwise."""
    if program == "dot":
        return find_dot()
    if os.environ.get("TVD_DOT"):
        beside = os.path.join(os.path.dirname(find_dot()), program + (".exe" if os.name == "nt" else ""))
        if os.path.isfile(beside) and os.access(beside, os.X_OK):
            return beside
    path = shutil.which(program)
    if path is None:
        raise GraphvizNotFound(
            f"Graphviz `{program}` was not found on PATH (static SVG/PNG/PDF export uses it); "
            f"export to .html or .json instead, or: {INSTALL_HINT}"
        )
    return path


def find_dot() -> str:
    """Path of the ``dot`` executable, or GraphvizNotFound saying how to install it."""
    explicit = os.environ.get("TVD_DOT")
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise GraphvizNotFound(f"$TVD_DOT={explicit!r} is not an executable Graphviz dot. {INSTALL_HINT}")
    path = shutil.which("dot")
    if path is None:
        raise GraphvizNotFound(
            f"Graphviz `dot` was not found on PATH; torchvista_dash needs it to lay out "
            f"graphs. {INSTALL_HINT}"
        )
    return path


def enlarge_pipes(proc: subprocess.Popen[bytes]) -> None:
    """Big pipes: the DOT goes in with one write, and dot never waits on us while we read its output."""
    for pipe in (proc.stdin, proc.stdout):
        if fcntl is not None and pipe is not None:
            try:
                fcntl.fcntl(pipe.fileno(), _F_SETPIPE_SZ, _READ_SIZE)
            except OSError:  # not Linux, or over the system's pipe limit: default pipes work too
                pass


class DotRun:
    """One ``dot -T<fmt>`` process (or another Graphviz ``program`` with extra ``args``), started at once and
    fed its DOT later with ``feed``.

    Use it as a context manager: leaving the block without a successful ``feed`` (the DOT could not be
    built) kills and reaps the process, so no dot is ever left running.
    """

    def __init__(
        self,
        fmt: str = "json",
        timeout: float | None = None,
        *,
        program: str = "dot",
        args: tuple[str, ...] = (),
    ) -> None:
        self.timeout = timeout_seconds(timeout)
        exe = find_program(program)
        self.program = program
        try:
            self._proc: subprocess.Popen[bytes] | None = spawn([exe, *args, f"-T{fmt}"])
        except OSError:
            raise GraphvizNotFound(
                f"Graphviz `{program}` at {exe} could not be started. {INSTALL_HINT}"
            ) from None
        enlarge_pipes(self._proc)

    def feed(self, source: str | bytes, on_output: Callable[[bytes], None] | None = None) -> bytes:
        """Send the DOT, wait for dot (at most ``timeout`` seconds from here) and return its output.

        ``on_output`` is called with each piece of output as it arrives, while dot is still writing the rest.
        """
        proc = self._proc
        if proc is None:
            raise RuntimeError("a DotRun is fed once")
        data = source.encode("utf-8") if isinstance(source, str) else source
        with slots.hold(len(data), self.timeout):  # Graphviz has started; it works when a core is free
            if on_output is not None and _CAN_PUMP:
                out, err = self._pump(proc, data, on_output)
            else:
                try:
                    out, err = proc.communicate(data, timeout=self.timeout)
                except subprocess.TimeoutExpired:
                    self._overran()
                if on_output is not None and proc.returncode == 0:
                    on_output(out)  # no select() on pipes here (Windows): all of it, at the end
        self._proc = None
        if proc.returncode != 0:
            text = err.decode("utf-8", "replace").strip()
            raise GraphvizError(
                f"Graphviz {self.program} failed (exit code {proc.returncode}): {text[:2000]}"
            )
        return out

    def _pump(
        self, proc: subprocess.Popen[bytes], data: bytes, on_output: Callable[[bytes], None]
    ) -> tuple[bytes, bytes]:
        """``communicate`` that hands each piece of stdout to ``on_output`` as it arrives."""
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        deadline = time.monotonic() + self.timeout
        out: list[bytes] = []
        err: list[bytes] = []
        todo = memoryview(data)
        with selectors.DefaultSelector() as sel:
            if todo:
                os.set_blocking(proc.stdin.fileno(), False)
                sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "in")
            else:
                proc.stdin.close()
            sel.register(proc.stdout.fileno(), selectors.EVENT_READ, "out")
            sel.register(proc.stderr.fileno(), selectors.EVENT_READ, "err")
            while sel.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._overran()
                for key, _ in sel.select(remaining):
                    if key.data == "in":
                        try:
                            todo = todo[os.write(key.fd, todo) :]
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:  # dot stopped reading: its exit code and stderr say why
                            todo = todo[:0]
                        if not todo:
                            sel.unregister(key.fd)
                            try:
                                proc.stdin.close()
                            except OSError:
                                pass
                        continue
                    piece = os.read(key.fd, _READ_SIZE)
                    if not piece:
                        sel.unregister(key.fd)
                    elif key.data == "out":
                        out.append(piece)
                        on_output(piece)
                    else:
                        err.append(piece)
        try:
            proc.wait(max(deadline - time.monotonic(), 0.001))
        except subprocess.TimeoutExpired:
            self._overran()
        proc.stdout.close()
        proc.stderr.close()
        return b"".join(out), b"".join(err)

    def _overran(self) -> NoReturn:
        self.close()
        raise GraphvizError(
            f"Graphviz {self.program} ran past its time budget of {self.timeout:g} s and was stopped. "
            f"Collapse some "
            f"modules, lower the node budget, or raise the timeout (layout_view(..., timeout=...) or "
            f"$TVD_DOT_TIMEOUT)."
        ) from None

    def close(self) -> None:
        """Kill and reap the process if it is still running (a no-op after ``feed``)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                try:
                    if pipe is not None:
                        pipe.close()
                except OSError:
                    pass
            proc.wait()

    def __enter__(self) -> DotRun:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def run_dot(
    source: str | bytes,
    fmt: str = "json",
    timeout: float | None = None,
    *,
    program: str = "dot",
    args: tuple[str, ...] = (),
) -> bytes:
    """Run ``dot -T<fmt>`` (or ``program`` with ``args``) on DOT ``source`` and return its output.

    Past ``timeout`` seconds (default ``$TVD_DOT_TIMEOUT``, else ``DEFAULT_TIMEOUT``) the process is killed
    and GraphvizError raised, so a huge graph never hangs the caller.
    """
    with DotRun(fmt, timeout, program=program, args=args) as run:
        return run.feed(source)
