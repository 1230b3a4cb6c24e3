"""Reading a saved ``.pt2`` (``torch.export.save``) with one clear sentence for every way it can fail.

``torch.export.load`` is for files the user chose, and not only because it is torch's own parser of a complex
archive: it unpickles parts of it with ``torch.load(weights_only=False)`` or ``pickle.loads`` (tensor
subclasses, custom and opaque objects), and when its example inputs do not load as plain data it tries them
again with ``weights_only=False``. A pickle runs whatever code it names, so a hostile ``.pt2`` could run
code in ``torch.export.load``. Before calling it, ``load_program`` therefore reads the archive's records
itself: every ``.pt`` record must load with ``weights_only=True`` (the restricted unpickler) and no weight or
constant may be stored as a pickle; a file that needs more is refused unless ``allow_pickle=True`` says the
user trusts it. Nothing that reaches the package over a network is ever passed here (the app's uploads and
folders take trace JSON only).

Its failures arrive in several shapes: a ``BadZipFile`` for a truncated file, a ``ValueError`` for an archive
version it does not read, and for most others a log record holding the real error followed by a bare
``RuntimeError`` ("check the warnings above"). The record is captured here instead of printed, and each
failure becomes one ``TraceFormatError`` that says what is wrong and what to do, with no traceback.
"""

from __future__ import annotations

import io
import json
import logging
import re
import warnings
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from torchvista_dash.model.checks import TraceFormatError

PROGRAM_SUFFIXES = (".pt2",)
_SAVE_HINT = "save it again with torch.export.save(exported_program, 'model.pt2')"


class ProgramLoadError(TraceFormatError):
    """A ``.pt2`` file that cannot be read as a torch.export program (the message says why and what to do)."""


def is_program_path(path: str | Path) -> bool:
    """Does ``path`` name a saved torch.export program? By its extension: contents never choose the
    reader."""
    return Path(path).suffix.lower() in PROGRAM_SUFFIXES


def load_program(path: str | Path, *, allow_pickle: bool = False) -> torch.export.ExportedProgram:
    """``torch.export.load(path)``, checked: a file that is not a program, is damaged, was saved by another
    torch, calls an op this process does not have, or (unless ``allow_pickle``) holds pickled objects that
    loading would run is a ``ProgramLoadError`` naming the fix."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no program file at {path}")
    where = path.name
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        if isinstance(exc, OSError) and not isinstance(exc, zipfile.BadZipFile):
            raise
        raise ProgramLoadError(
            f"{where} is not a readable torch.export program: it is not a whole zip archive (truncated, or "
            f"not a .pt2 at all); {_SAVE_HINT}"
        ) from None
    with archive:
        names = archive.namelist()
        if not any(n.endswith("/archive_format") or n == "archive_format" for n in names) or not any(
            re.search(r"(^|/)models/[^/]+\.json$", n) for n in names
        ):
            raise ProgramLoadError(
                f"{where} is a zip archive but not a torch.export program (it has no models/*.json record); "
                f"give a file written by torch.export.save"
            )
        saved_torch = _saved_torch_version(archive, names)
        if not allow_pickle:
            pickled = _pickled_records(archive, names)
            if pickled:
                shown = ", ".join(pickled[:3]) + (f" and {len(pickled) - 3} more" if len(pickled) > 3 else "")
                raise ProgramLoadError(
                    f"{where} holds pickled objects ({shown}) that torch.export.load would unpickle, running "
                    f"whatever code they name: open it only if you trust where it came from, with "
                    f"load_trace(path, allow_pickle=True) or the command's --allow-pickle"
                )
    with _captured_log() as records:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ep = torch.export.load(str(path))
        except Exception as exc:
            cause = next(
                (r.exc_info[1] for r in records if r.exc_info and r.exc_info[1] and r.name == "torch.export"),
                None,
            )
            raise _explain(where, cause or exc, saved_torch) from None
    if not isinstance(ep, torch.export.ExportedProgram):  # pragma: no cover - torch's contract
        raise ProgramLoadError(f"{where} did not hold an ExportedProgram (got {type(ep).__name__})")
    return ep


def _explain(where: str, exc: BaseException, saved_torch: str | None) -> ProgramLoadError:
    text = str(exc)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    op = re.search(r"failed to resolve (\S+) to an operator", text)
    if op:
        return ProgramLoadError(
            f"{where} calls {op.group(1)}, an op this Python process does not define: import the library "
            f"that registers that custom op, then load the file again"
        )
    unknown_type = re.search(r"Deserializing ([\w.]+) in pytree is not registered", text)
    if unknown_type:
        dotted = unknown_type.group(1)
        module = dotted.rpartition(".")[0] or dotted  # the module that defines (and so registers) the type
        return ProgramLoadError(
            f"{where} returns or takes a {dotted}, a type this Python process does not know yet: import "
            f"{module} first (in Python: import {module}; on the command line: --import {module}), then "
            f"load the file again"
        )
    if re.search(r"version", text, re.IGNORECASE) and re.search(
        r"(does not match|mismatch|unsupported|incompatible|newer|older|expected)", text, re.IGNORECASE
    ):
        made = f" (saved by torch {saved_torch})" if saved_torch and saved_torch != torch.__version__ else ""
        return ProgramLoadError(
            f"{where} was saved in a format this torch ({torch.__version__}) does not read{made}: "
            f"{_clip(first)}; load it with the torch that saved it, or export the model again with this one"
        )
    return ProgramLoadError(
        f"{where} is a damaged torch.export program ({type(exc).__name__}: {_clip(first)}); {_SAVE_HINT}"
    )


def _clip(s: str, n: int = 160) -> str:
    return s if len(s) <= n else s[: n - 3] + "..."


def _saved_torch_version(archive: zipfile.ZipFile, names: list[str]) -> str | None:
    """The torch that saved the program, from its model record (for the message when versions differ)."""
    for n in names:
        if re.search(r"(^|/)models/[^/]+\.json$", n):
            try:
                with archive.open(n) as f:
                    head = f.read(1 << 20)
                found = re.search(rb'"torch_version"\s*:\s*"([^"]{1,40})"', head)
                if found:
                    return found.group(1).decode("ascii", "replace")
                data = json.loads(head)
                v = data.get("torch_version") if isinstance(data, dict) else None
                return v if isinstance(v, str) else None
            except (ValueError, OSError, zipfile.BadZipFile, RuntimeError):
                return None
    return None


_PICKLED_PREFIXES = ("custom_obj_", "opaque_obj_")


def _pickled_records(archive: zipfile.ZipFile, names: list[str]) -> list[str]:
    """Records that torch.export.load would unpickle beyond plain tensors and containers: a ``.pt`` record the
    restricted unpickler (``weights_only=True``) refuses, and weights or constants stored as pickles."""
    found: list[str] = []
    for n in names:
        base = n.rsplit("/", 1)[-1]
        if n.endswith(".pt"):
            try:
                with archive.open(n) as f:
                    torch.load(io.BytesIO(f.read()), weights_only=True)
            except Exception:  # anything the restricted unpickler will not read (or cannot read at all)
                found.append(n)
        elif base.endswith("_config.json") and ("/weights/" in f"/{n}" or "/constants/" in f"/{n}"):
            try:
                with archive.open(n) as f:
                    config = json.load(f).get("config", {})
            except (ValueError, AttributeError, OSError, zipfile.BadZipFile, RuntimeError):
                continue  # torch's own load names what is wrong with it
            if not isinstance(config, dict):
                continue
            for fqn, entry in config.items():
                if not isinstance(entry, dict):
                    continue
                path_name = str(entry.get("path_name", ""))
                if entry.get("use_pickle") is True or path_name.startswith(_PICKLED_PREFIXES):
                    found.append(f"{fqn} ({path_name})")
    return found


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


_LOGGED_PACKAGES = ("torch.export", "torch._export")


def _export_loggers() -> list[logging.Logger]:
    """The loggers ``torch.export.load`` writes to: the two packages' own and every logger below them that
    exists. The children count because torch gives the ones it registers (``torch._export.serde.serialize``
    among them) a handler of their own and ``propagate = False``, so their records never reach a parent."""
    names = set(_LOGGED_PACKAGES)
    names.update(
        name
        for name, lg in list(logging.Logger.manager.loggerDict.items())
        if isinstance(lg, logging.Logger) and name.startswith(tuple(p + "." for p in _LOGGED_PACKAGES))
    )
    return [logging.getLogger(name) for name in sorted(names)]


@contextmanager
def _captured_log() -> Iterator[list[logging.LogRecord]]:
    """What ``torch.export.load`` logs while it runs, kept instead of printed (it logs the real error of a
    failed load, then raises a bare RuntimeError). Kept records are never formatted: torch's own fallback
    warning for example inputs passes fewer arguments than its message has ``%s``, and formatting it prints
    "--- Logging error ---" with a traceback (or, under a handler that re-raises, fails the load)."""
    loggers = _export_loggers()
    keep = _Keep()
    saved = [(lg.handlers, lg.propagate) for lg in loggers]  # torch's own handler may sit on the logger
    for lg in loggers:
        lg.handlers = [keep]
        lg.propagate = False
    try:
        yield keep.records
    finally:
        for lg, (handlers, propagate) in zip(loggers, saved, strict=True):
            lg.handlers = handlers
            lg.propagate = propagate
