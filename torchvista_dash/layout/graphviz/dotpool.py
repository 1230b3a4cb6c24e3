"""dot processes kept running between layouts: dot lays out each graph of its input as soon as the graph's
closing brace arrives and flushes the result, so one process serves graph after graph.

The layout by module sends a batch of pieces per level of nesting; starting dot anew for each batch cost a
process start (its libraries and plugins loaded again) per level, the larger part of a small piece's time,
and of a click that re-lays out three pieces. A process that overruns its time budget, or answers in a way
that is not what was asked, is killed, never reused.
"""

from __future__ import annotations

import os
import selectors
import threading
import time

from torchvista_dash.layout.graphviz.run import (
    _CAN_PUMP,
    _READ_SIZE,
    DotRun,
    GraphvizError,
    GraphvizNotFound,
    enlarge_pipes,
    find_dot,
    slots,
    spawn,
)

PROBE = "digraph { a -> b }"  # a new process must answer this before it is trusted with a batch
PROBE_TIMEOUT = 10.0  # seconds (dot answers it in milliseconds once started)
KEEP_IDLE = 2  # idle processes kept per output format (the machines have two cores)
MAX_GRAPHS = 48  # graphs one process lays out before it retires: Graphviz 2.43 keeps state between
# graphs and can crash (SIGSEGV) after about a hundred of them
_DOC_END = b"\n}\n"  # dot's JSON documents close at column 0: nested braces are indented


class DotServer:
    """One long-running ``dot -T<fmt>``; ``lay_out`` sends graphs and returns one output document per
    graph."""

    def __init__(self, exe: str, fmt: str) -> None:
        self.fmt = fmt
        try:
            self.proc = spawn([exe, f"-T{fmt}"])
        except OSError:
            raise GraphvizNotFound(f"Graphviz `dot` at {exe} could not be started") from None
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        enlarge_pipes(self.proc)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            os.set_blocking(pipe.fileno(), False)
        self.err = bytearray()
        self.served = 0

    def lay_out(self, graphs: list[str], timeout: float) -> list[bytes]:
        """Each graph's output, in order; GraphvizError (and the process killed) past ``timeout`` seconds."""
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.err = bytearray()
        todo = memoryview("\n".join(graphs).encode("utf-8") + b"\n")
        out = bytearray()
        docs: list[bytes] = []
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "in")
            sel.register(proc.stdout.fileno(), selectors.EVENT_READ, "out")
            sel.register(proc.stderr.fileno(), selectors.EVENT_READ, "err")
            while len(docs) < len(graphs):
                left = deadline - time.monotonic()
                if left <= 0:
                    self.kill()
                    raise GraphvizError(
                        f"Graphviz dot ran past its time budget of {timeout:g} s and was stopped"
                    )
                for key, _ in sel.select(left):
                    if key.data == "in":
                        try:
                            todo = todo[os.write(key.fd, todo) :]
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            self.kill()
                            raise GraphvizError(
                                f"Graphviz dot stopped: {self.err.decode('utf-8', 'replace')[:2000]}"
                            ) from None
                        if not todo:
                            sel.unregister(key.fd)
                        continue
                    piece = os.read(key.fd, _READ_SIZE)
                    if not piece:  # dot exited
                        self.kill()
                        raise GraphvizError(
                            f"Graphviz dot failed: {self.err.decode('utf-8', 'replace')[:2000]}"
                        )
                    if key.data == "err":
                        self.err += piece
                        continue
                    out += piece
                    while True:
                        end = out.find(_DOC_END)
                        if end < 0:
                            break
                        docs.append(bytes(out[: end + len(_DOC_END)]))
                        del out[: end + len(_DOC_END)]
        if out.strip():
            self.kill()
            raise GraphvizError("Graphviz dot wrote more than was asked for")
        self.served += len(graphs)
        return docs

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        self.proc.wait()


_idle: dict[tuple[str, str], list[DotServer]] = {}  # (dot executable, format) → idle processes
_lock = threading.Lock()


def run_graphs(fmt: str, graphs: list[str], timeout: float) -> list[bytes]:
    """Lay out ``graphs`` (DOT texts) with an idle dot process of the pool (started if there is none)."""
    if not _CAN_PUMP:  # no select() on pipes (Windows): one dot process per batch
        return _one_run(fmt, graphs, timeout)
    exe = find_dot()  # dot gone or $TVD_DOT changed: the kept processes are not what is asked for
    with _lock:
        idle = _idle.setdefault((exe, fmt), [])
        server = idle.pop() if idle else None
    if server is None or not server.alive():
        server = DotServer(exe, fmt)
        try:  # a dot that does not answer graph by graph: this batch goes to one plain run instead
            server.lay_out([PROBE], min(timeout, PROBE_TIMEOUT))
        except GraphvizError:
            server.kill()
            return _one_run(fmt, graphs, timeout)
    with slots.hold(sum(len(g) for g in graphs), timeout):  # the cores' admission (run.py), as for DotRun
        try:
            docs = server.lay_out(graphs, timeout)  # kills the process on any failure
        except GraphvizError:
            # a long-lived dot sometimes crashes (SIGSEGV) on a graph that a fresh one lays out: Graphviz
            # keeps state between graphs. Once more in a new process; a timeout (SIGKILL, ours) is final.
            if server.proc.returncode is None or server.proc.returncode >= 0 or server.proc.returncode == -9:
                raise
            server = DotServer(exe, fmt)
            docs = server.lay_out(graphs, timeout)
    with _lock:
        if server.alive() and server.served < MAX_GRAPHS and len(_idle[(exe, fmt)]) < KEEP_IDLE:
            _idle[(exe, fmt)].append(server)
            server = None
    if server is not None:
        server.kill()
    return docs


def _one_run(fmt: str, graphs: list[str], timeout: float) -> list[bytes]:
    """The batch through one ``dot`` that reads all its input and exits (its own errors as they are)."""
    with DotRun(fmt, timeout) as r:
        raw = r.feed("\n".join(graphs))
    parts = raw.split(_DOC_END)
    docs = [p + _DOC_END for p in parts if p.strip()]
    if len(docs) != len(graphs):
        raise GraphvizError(f"Graphviz laid out {len(docs)} of {len(graphs)} graphs")
    return docs


def idle_pids() -> list[int]:
    """Process ids of the idle dot processes kept for the next batch."""
    with _lock:
        return [s.proc.pid for group in _idle.values() for s in group]


def shut_down() -> None:
    """Stop every idle dot process (for tests that count processes; at exit ``run.kill_children`` stops every
    dot, idle or busy)."""
    with _lock:
        servers = [s for group in _idle.values() for s in group]
        _idle.clear()
    for s in servers:
        s.kill()
