"""Reading a saved ``.pt2`` (``torch.export.save``) with one clear sentence for every way it can fail.

``torch.export.load`` is for files the user chose: it rebuilds the program's graph and reads its weights
(no pickle runs for a ``.pt2`` of this torch's format), but it is torch's own parser of a complex archive,
so nothing that reaches the package over a network is ever passed to it (the app's uploads take trace JSON
only). Its failures arrive in several shapes: a ``BadZipFile`` for a truncated file, a ``ValueError`` for an
archive version it does not read, and for most others a log record holding the real error followed by a bare
``RuntimeError`` ("check the warnings above"). The record is captured here instead of printed, and each
failure becomes one ``TraceFormatError`` that says what is wrong and what to do, with no traceback.
"""

from __future__ import annotations

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


def load_program(path: str | Path) -> torch.export.ExportedProgram:
    """``torch.export.load(path)``, checked: a file that is not a program, is damaged, was saved by another
    torch, or calls an op this process does not have is a ``ProgramLoadError`` naming the fix."""
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
    with _captured_log() as records:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ep = torch.export.load(str(path))
        except Exception as exc:
            cause = next((r.exc_info[1] for r in records if r.exc_info and r.exc_info[1]), None)
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


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _captured_log() -> Iterator[list[logging.LogRecord]]:
    """What ``torch.export.load`` logs while it runs, kept instead of printed (it logs the real error of a
    failed load, then raises a bare RuntimeError)."""
    logger = logging.getLogger("torch.export")
    keep = _Keep()
    propagate = logger.propagate
    logger.addHandler(keep)
    logger.propagate = False
    try:
        yield keep.records
    finally:
        logger.removeHandler(keep)
        logger.propagate = propagate
