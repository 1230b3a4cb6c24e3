"""``python -m torchvista_dash serve|export|diff``: the gallery, a saved trace or a model function, served or
exported; ``diff A B`` compares two of them.

TARGET is one of: a saved trace (``trace.json``), ``package.module:function`` (a function returning
``(model, inputs)`` or ``(model, args, kwargs)``), the name of a built-in demo (``gpt``), or a saved
torch.export program (``model.pt2``, read with ``torch.export.load``: only files you chose); ``serve``
also takes a folder of saved traces (a gallery of them).
Every bad input ends in one ``error: ...`` line that says what to do, and a non-zero exit; a user function
that raises shows its traceback first. TARGET is checked before the port, so the first error named is the
one to fix first.
"""

from __future__ import annotations

import argparse
import errno
import gc
import importlib
import os
import socket
import sys
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchvista_dash.model.errors import TorchvistaDashError

if TYPE_CHECKING:  # pragma: no cover
    from torchvista_dash.traced import Trace

from torchvista_dash.pipeline import FORMATS as EXPORT_FORMATS


class CLIError(TorchvistaDashError):
    """A user mistake: printed as one line, exit status 2 (``detail``: printed before it, e.g. a
    traceback)."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


def _demo_names() -> list[str]:
    from torchvista_dash.demos import DEMOS

    return list(DEMOS)


def resolve_target(target: str, allow_pickle: bool = False, *, values: bool = False) -> Trace:
    """Turn a TARGET string into a Trace (see the module docstring for the forms); ``values``: a model or a
    demo is traced with its value summaries (a saved trace holds what it was saved with).

    A failed forward pass gives no warning here: the command prints its own, once."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*\bforward pass (failed|of .* raised)", category=UserWarning
        )
        return _resolve(target, allow_pickle, values)


def _resolve(target: str, allow_pickle: bool = False, values: bool = False) -> Trace:
    from torchvista_dash import load_trace
    from torchvista_dash.model.graph import TraceFormatError

    path = Path(target)
    if path.is_file():
        try:
            return load_trace(path, allow_pickle=allow_pickle)
        except TraceFormatError as exc:
            text = str(exc)  # a program's errors already start with its file's name
            raise CLIError(text if text.startswith(path.name + " ") else f"{target}: {text}") from None
        except OSError as exc:
            raise CLIError(f"cannot read {target}: {exc.strerror or exc}") from None
    if target.endswith(".pt2"):
        raise CLIError(
            f"no such program file: {target} (save one with torch.export.save(exported_program, "
            f"'{path.name}'))"
        )
    if target.endswith(".json") or "/" in target or "\\" in target:
        raise CLIError(
            f"no such trace file: {target} (save one with trace.save('{path.name}') or "
            f"`python -m torchvista_dash export TARGET -o {path.name}`)"
        )
    if ":" in target:
        return _trace_from_function(target, values)
    if target in _demo_names():
        from torchvista_dash.demos import demo_trace

        return demo_trace(target, values=values)
    raise CLIError(
        f"don't know what {target!r} is: give a saved trace (file.json), a torch.export program (file.pt2), "
        f"module:function returning (model, inputs), or a demo name ({', '.join(_demo_names())})"
    )


def _trace_from_function(target: str, values: bool = False) -> Trace:
    mod_name, _, func_name = target.partition(":")
    if not mod_name or not func_name or ":" in func_name:
        raise CLIError(f"bad target {target!r}: write it as package.module:function")
    if "" not in sys.path and "." not in sys.path:  # like `python -m`, find modules in the current directory
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(mod_name)
    except ImportError as exc:
        raise CLIError(
            f"cannot import module {mod_name!r} (from {target!r}): {exc}. "
            "Run from the directory that contains it or install its package."
        ) from None
    func: Any = module
    for part in func_name.split("."):
        if not hasattr(func, part):
            raise CLIError(f"module {mod_name!r} has no attribute {func_name!r} (from {target!r})")
        func = getattr(func, part)
    if not callable(func):
        raise CLIError(f"{target} is a {type(func).__name__}, not a function returning (model, inputs)")
    try:
        result = func()
    except Exception as exc:
        # the user's frames only: the first frame is this function's call of theirs
        tb = "".join(
            traceback.format_exception(
                type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None
            )
        )
        raise CLIError(f"{target}() raised {type(exc).__name__}: {exc}", detail=tb.rstrip()) from None
    model, args, kwargs = _unpack(target, result)
    from torchvista_dash import trace_model

    return trace_model(model, args, kwargs=kwargs, name=type(model).__name__, values=values)


def _unpack(target: str, result: Any) -> tuple[Any, Any, dict[str, Any] | None]:
    import torch

    want = "(model, inputs) or (model, args, kwargs)"
    if not isinstance(result, (tuple, list)) or len(result) not in (2, 3):
        raise CLIError(f"{target}() must return {want}; it returned {_short_type(result)}")
    model = result[0]
    if not isinstance(model, torch.nn.Module):
        raise CLIError(
            f"{target}() must return {want} with an nn.Module first; the first item is {_short_type(model)}"
        )
    args = result[1]
    kwargs = result[2] if len(result) == 3 else None
    if kwargs is not None and not isinstance(kwargs, dict):
        raise CLIError(
            f"{target}() returned 3 items; the third (kwargs) must be a dict, not {_short_type(kwargs)}"
        )
    return model, args, kwargs


def _short_type(x: Any) -> str:
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)} items"
    return "None" if x is None else f"a {type(x).__name__}"


def check_port(port: int) -> None:
    """A port number a socket can take (werkzeug's own message is an OverflowError traceback)."""
    if not 0 <= port <= 65535:
        raise CLIError(f"--port {port} is not a port number: give one from 0 to 65535 (0 picks a free one)")


def check_port_free(host: str, port: int) -> None:
    """Fail early, with advice, when the port is taken (werkzeug's own message is a traceback)."""
    check_port(port)
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CLIError(
                    f"port {port} is already in use on {host}: stop the other server or "
                    f"pass --port N (--port 0 picks a free one)"
                ) from None
            raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


class TerminalProgress:
    """A one-line bar on the terminal for a layout by module: which stage, how many of how many modules.
    Views of fewer than ``MIN_MODULES`` modules lay out too fast to need one and print nothing."""

    MIN_MODULES = 30
    WIDTH = 30

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.shown = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        if total < self.MIN_MODULES:
            return
        if stage == "compose":
            self.stream.write(f"\rlaid out {total:,} modules; composing the picture{' ' * 20}\n")
        else:
            bar = "#" * (self.WIDTH * done // max(total, 1))
            self.stream.write(f"\rlaying out modules [{bar:<{self.WIDTH}}] {done:,}/{total:,}")
        self.stream.flush()
        self.shown = True


# ---- commands ------------------------------------------------------------------------------
def _depth(text: str) -> int | None:
    from torchvista_dash.model.options import depth_from_text

    try:
        return depth_from_text(text)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def _flags(ns: argparse.Namespace) -> dict[str, Any]:
    """The on/off view options as given on the command line, by their ``ViewOptions`` names."""
    from torchvista_dash.model.options import flag_options

    return {name: getattr(ns, name) for name, _, _ in flag_options()}


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:2000] or type(exc).__name__


def _check_settings(serving: bool = False) -> None:
    """The environment settings the layout (and the server) read when used, checked up front: a bad one is
    one ``error:`` line now, not a message in every page later."""
    from torchvista_dash.layout.graphviz import run

    checks: list[Any] = [run.timeout_seconds, run.max_jobs]
    if serving:
        from torchvista_dash.app.http import guard
        from torchvista_dash.app.traces import registry

        checks += [guard.max_request_bytes, registry.max_traces]
    for check in checks:
        try:
            check()
        except ValueError as exc:
            raise CLIError(str(exc)) from None


def _open_store(url: str | None, workers: int) -> tuple[str, str | None]:
    """The store serve uses (its URL, and a temporary folder to remove at exit), checked to answer now: an
    unreachable one is one ``error:`` line naming it, not a message in every page later."""
    from torchvista_dash.app.server import workers as workers_mod
    from torchvista_dash.app.traces import shared

    cleanup = None
    if not url and workers > 1:
        url, cleanup = workers_mod.temporary_store()
    try:
        store = workers_mod.check_store(url or "") if workers > 1 else shared.open_store(url)
        store.ping()
    except (shared.StoreError, shared.StoreUnavailable, workers_mod.WorkersError) as exc:
        raise CLIError(_one_line(exc)) from None
    shared.configure(store)
    return store.url, cleanup


def _serve(ns: argparse.Namespace) -> int:
    from torchvista_dash.app.server.server import make_app, serve_forever

    check_port(ns.port)  # the arguments, then the target, then the port: cheapest first
    if ns.workers < 1:
        raise CLIError(f"--workers must be at least 1, not {ns.workers}")
    _check_settings(serving=True)
    store_url, cleanup = _open_store(ns.store or os.environ.get("TVD_STORE"), ns.workers)
    options: dict[str, Any] = {
        "depth": _depth(ns.depth),
        "theme": ns.theme,
        "rankdir": ns.direction,
        "color_by": ns.color_by,
        "style": _style(ns),
        **_flags(ns),
    }
    if ns.workers > 1:
        return _serve_workers(ns, options, store_url, cleanup)
    if ns.target is None:
        options.update(gallery=True, title="torchvista_dash gallery")
    elif Path(ns.target).is_dir():
        from torchvista_dash.app.server.gallery import FolderError, folder_gallery

        try:
            gallery, skipped = folder_gallery(ns.target)
        except FolderError as exc:
            raise CLIError(str(exc)) from None
        for line in skipped:
            print(f"warning: skipping {line}", file=sys.stderr)
        options.update(gallery=gallery, title=gallery.title)
    else:
        _import_modules(ns)
        trace = resolve_target(ns.target, ns.allow_pickle, values=ns.values)
        err = trace.graph.error
        if err is not None:
            print(
                f"warning: the forward pass failed ({err.type}: {err.message}); serving the partial graph",
                file=sys.stderr,
            )
        options.update(traces=[trace], title=trace.graph.model_name or "torchvista_dash")
    check_port_free(ns.host, ns.port)
    app = make_app(**options, allowed_hosts=ns.allow_host, push_token=ns.push_token)
    # What is traced now lives as long as this process: frozen, out of the collector's sight, it is not walked
    # by every full collection (over an 80-layer Llama's trace one takes about 0.3 s, in the middle of a first
    # view or a click; bench/bench_figure_build.py measures it)
    gc.freeze()
    serve_forever(app, ns.host, ns.port)
    return 0


def _serve_workers(
    ns: argparse.Namespace, options: dict[str, Any], store_url: str, cleanup: str | None
) -> int:
    """serve under gunicorn: the target traced here once and kept in the store, each worker reading it."""
    from torchvista_dash.app.server import workers
    from torchvista_dash.app.traces import sharing

    trace_id = folder = None
    if ns.target is not None and Path(ns.target).is_dir():
        folder = ns.target
    elif ns.target is not None:
        trace = resolve_target(ns.target)
        sharing.publish_trace(trace, keep=True)  # the server's own trace: never dropped from the store
        trace_id = trace.id
        options["title"] = trace.graph.model_name or "torchvista_dash"
    check_port_free(ns.host, ns.port)
    site = workers.Site(store_url, trace_id, folder, options, tuple(ns.allow_host), ns.push_token)
    try:
        workers.run(site, ns.host, ns.port, ns.workers, cleanup=cleanup)
    except workers.WorkersError as exc:
        raise CLIError(str(exc)) from None
    return 0


def _push(ns: argparse.Namespace) -> int:
    from torchvista_dash import load_trace
    from torchvista_dash.app.http.push import PushError, push_trace

    try:
        trace = load_trace(ns.trace)
    except (ValueError, OSError) as exc:
        raise CLIError(f"cannot push {ns.trace}: {_one_line(exc)}") from None
    try:
        url = push_trace(trace, ns.server, ns.token)
    except PushError as exc:
        raise CLIError(_one_line(exc)) from None
    print(url)
    return 0


def _export(ns: argparse.Namespace) -> int:
    from torchvista_dash.pipeline import export, resolve_format

    out = Path(ns.output)
    depth = _depth(ns.depth)
    try:
        fmt = resolve_format(out, ns.format)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if not out.parent.exists():
        raise CLIError(f"the folder {out.parent} does not exist; create it first")
    _import_modules(ns)
    trace = resolve_target(ns.target, ns.allow_pickle, values=ns.values)
    if fmt != "json":
        _check_settings()
    from torchvista_dash.layout import reporting

    try:
        with reporting(TerminalProgress(sys.stderr)):  # a bar on the terminal while a big view lays out
            export(
                trace,
                out,
                fmt=fmt,
                depth=depth,
                theme=ns.theme,
                rankdir=ns.direction,
                color_by=ns.color_by,
                style=_style(ns),
                root=ns.root,
                **_flags(ns),
            )
    except RuntimeError as exc:  # Graphviz missing, failing or over its time budget
        raise CLIError(f"cannot export {out.name}: {_one_line(exc)}") from None
    except ValueError as exc:  # e.g. --color-by time on a trace that was not timed
        raise CLIError(str(exc)) from None
    err = trace.graph.error
    if err is not None:
        print(
            f"warning: the forward pass failed ({err.type}: {err.message}); exported the partial graph",
            file=sys.stderr,
        )
    print(f"wrote {out}")
    return 0


def _divergence_line(d: Any) -> str:
    """Where two value traces first diverge (torch.allclose's tolerances), or why that cannot be told."""
    from torchvista_dash.model.valuediff import StructureMismatch

    try:
        first = d.first_divergence()
    except StructureMismatch as exc:
        return f"values: not compared: {exc}"
    if first is None:
        return "values: the two runs agree (every op within rtol=1e-05, atol=1e-08)"
    where = first.qualname or "the top level"
    return (
        f"values: first divergence at {first.name} ({first.node}) in {where}: "
        f"relative difference {first.rel:.3g}"
    )


def _diff(ns: argparse.Namespace) -> int:
    from torchvista_dash.compare import compare

    _import_modules(ns)
    values = getattr(ns, "values", False)
    a = resolve_target(ns.a, ns.allow_pickle, values=values)
    b = resolve_target(ns.b, ns.allow_pickle, values=values)
    d = compare(a, b)
    s = d.summary()
    print(
        f"{ns.a} → {ns.b}: {len(s['added'])} added, {len(s['removed'])} removed, {len(s['changed'])} changed"
    )
    if "values" in a.graph.measured and "values" in b.graph.measured:
        print(_divergence_line(d))
    if ns.output is None:
        from torchvista_dash.app.server.server import make_app, serve_forever

        _check_settings(serving=True)
        check_port_free(ns.host, ns.port)
        serve_forever(
            make_app(
                traces=[d.trace],
                depth=_depth(ns.depth),
                theme=ns.theme,
                rankdir=ns.direction,
                **_flags(ns),
                title=f"diff: {d.trace.graph.model_name}",
                allowed_hosts=ns.allow_host,
            ),
            ns.host,
            ns.port,
        )
        return 0
    out = Path(ns.output)
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in EXPORT_FORMATS:
        raise CLIError(
            f"can't tell the format of {out}: use one of the extensions {', '.join(EXPORT_FORMATS)} "
            "(json writes the summary)"
        )
    if not out.parent.exists():
        raise CLIError(f"the folder {out.parent} does not exist; create it first")
    if fmt == "json":
        d.export(out)
    else:
        _check_settings()
        try:
            d.export(out, depth=_depth(ns.depth), theme=ns.theme, rankdir=ns.direction, **_flags(ns))
        except RuntimeError as exc:  # Graphviz missing, failing or over its time budget
            raise CLIError(f"cannot export {out.name}: {_one_line(exc)}") from None
    print(f"wrote {out}")
    return 0


def _style(ns: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    from torchvista_dash.model.options import style_rules

    try:
        return style_rules("; ".join(ns.style or ()))
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def _color_by_option(p: argparse.ArgumentParser) -> None:
    from torchvista_dash.model.options import COLOR_BY

    p.add_argument(
        "--style",
        action="append",
        default=[],
        metavar="PATTERN=#COLOUR",
        help="colour boxes by name or class, first match wins (repeatable): --style 're:.*attn.*=#e45756' "
        "--style 'cls:Linear=#4c78a8'",
    )
    p.add_argument(
        "--color-by",
        choices=COLOR_BY,
        default=None,
        help="colour boxes by a metric (time needs a trace made with timing=True; absmax, std, zeros and "
        "nonfinite a value trace: --values)",
    )
    p.add_argument(
        "--values",
        action="store_true",
        help="trace a model or demo with its value summaries (min, max, mean, std, NaN/Inf, zeros)",
    )


def _view_options(p: argparse.ArgumentParser) -> None:
    """The first view's options, the same for serve, export and diff (on/off ones from
    ``options.flag_options``)."""
    from torchvista_dash.model.options import flag_options

    p.add_argument(
        "--depth", default="1", help="module depth to open (default 1; -1 or all opens everything)"
    )
    for name, default, text in flag_options():
        p.add_argument(
            f"--{name.replace('_', '-')}",
            action=argparse.BooleanOptionalAction,
            default=default,
            help=f"{text} (default: {'on' if default else 'off'})",
        )
    p.add_argument("--theme", choices=("light", "dark"), default="light")
    p.add_argument(
        "--rankdir",
        "--direction",
        dest="direction",
        choices=("TB", "LR"),
        default="TB",
        help="top to bottom (TB, default) or left to right (LR)",
    )


def _pickle_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-pickle",
        action="store_true",
        help="open a .pt2 that holds pickled objects (loading it runs the code they name: only for files "
        "you trust)",
    )
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE before reading TARGET (repeatable): a .pt2 whose inputs or outputs are a "
        "library's types (transformers' model outputs) needs that library imported",
    )


def _import_modules(ns: argparse.Namespace) -> None:
    for name in getattr(ns, "imports", []):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise CLIError(f"--import {name}: cannot import it ({exc})") from None


def build_parser() -> argparse.ArgumentParser:
    first, rest = (__doc__ or "").replace("``", "").split("\n\n", 1)
    p = argparse.ArgumentParser(
        prog="python -m torchvista_dash", description=" ".join(first.split()), epilog=" ".join(rest.split())
    )
    sub = p.add_subparsers(dest="command", required=True)
    target_help = (
        "a saved trace (file.json) or torch.export program (file.pt2), module:function returning "
        "(model, inputs) or (model, args, kwargs), or a demo name"
    )
    s = sub.add_parser("serve", help="serve the interactive graph (no TARGET: the gallery of demo models)")
    s.add_argument(
        "target", nargs="?", help=target_help + ", or a folder of saved traces (served as a gallery)"
    )
    s.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8050, help="port (default 8050; 0 picks a free one)")
    s.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests for this Host name (repeatable; '*' for any). Only the bound "
        "address, localhost, 127.0.0.1 and ::1 are answered otherwise (DNS rebinding)",
    )
    s.add_argument(
        "--store",
        metavar="URL",
        help="where workers and hosts share traces: file:///path or redis://host:6379/0 (default "
        "$TVD_STORE, else this process's memory; with --workers, a temporary folder)",
    )
    s.add_argument("--workers", type=int, default=1, help="worker processes, under gunicorn (default 1)")
    s.add_argument(
        "--push-token",
        metavar="T",
        default=None,
        help="accept traces pushed with this token (default $TVD_PUSH_TOKEN; none: every push refused)",
    )
    _view_options(s)
    _color_by_option(s)
    _pickle_option(s)
    s.set_defaults(func=_serve)
    u = sub.add_parser("push", help="send a saved trace to a running server (it answers the page's link)")
    u.add_argument("trace", help="a saved trace (file.json)")
    u.add_argument("--server", required=True, metavar="URL", help="the server's page, e.g. http://host:8050/")
    u.add_argument("--token", metavar="T", help="the server's push token (default $TVD_PUSH_TOKEN)")
    u.set_defaults(func=_push)
    e = sub.add_parser("export", help="write the picture (html, svg, png, pdf) or the trace (json)")
    e.add_argument("target", help=target_help)
    e.add_argument("-o", "--output", required=True, help="output file; its extension picks the format")
    e.add_argument("--format", choices=EXPORT_FORMATS, help="override the format the extension implies")
    _view_options(e)
    _color_by_option(e)
    e.add_argument(
        "--root",
        default=None,
        metavar="QUALNAME",
        help="draw one module as its own graph, with its own inputs and outputs (e.g. layers.3.mlp)",
    )
    _pickle_option(e)
    e.set_defaults(func=_export)
    d = sub.add_parser(
        "diff", help="compare two traces: serve the diff drawn as one graph, or export it with -o"
    )
    d.add_argument("a", help="the first (older) trace: " + target_help)
    d.add_argument("b", help="the second (newer) trace, the same kinds of TARGET")
    d.add_argument(
        "-o",
        "--output",
        help="write the diff picture (html, svg, png, pdf) or its summary (json) instead of serving it",
    )
    d.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    d.add_argument("--port", type=int, default=8050, help="port (default 8050; 0 picks a free one)")
    d.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests for this Host name (see serve)",
    )
    _view_options(d)
    _pickle_option(d)
    d.set_defaults(func=_diff)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m torchvista_dash`` and the ``torchvista-dash`` script; returns the exit
    status."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        return int(ns.func(ns))
    except CLIError as exc:
        if exc.detail:
            print(exc.detail, file=sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
