"""load_trace('model.pt2'): a saved program loads like the program itself, and every hostile or foreign file
gives one clear TraceFormatError sentence that says what to do (no traceback, nothing printed, no state
left behind)."""

from __future__ import annotations

import json
import logging
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import _get_current_dispatch_mode

from torchvista_dash import TraceFormatError, from_exported, load_trace
from torchvista_dash.frontends.export.program import NO_STACK_NOTE


class _Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.export.ExportedProgram]:
    torch.manual_seed(0)
    ep = torch.export.export(_Small().eval(), (torch.randn(2, 4),))
    path = tmp_path_factory.mktemp("pt2") / "small.pt2"
    torch.export.save(ep, path)
    return path, ep


def test_a_saved_program_loads_as_the_program_itself(
    saved: tuple[Path, torch.export.ExportedProgram],
) -> None:
    path, ep = saved
    assert load_trace(path).graph.to_bytes() == from_exported(ep).graph.to_bytes()
    assert load_trace(str(path)).id == from_exported(ep).id


def _rewrite(src: Path, dst: Path, change: Callable[[str, bytes], bytes | None]) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info.filename))
            if data is not None:
                zout.writestr(info, data)
    return dst


def _model_json(change: Callable[[dict], None]) -> Callable[[str, bytes], bytes | None]:
    def edit(name: str, data: bytes) -> bytes | None:
        if name.endswith("models/model.json"):
            d = json.loads(data)
            change(d)
            return json.dumps(d).encode()
        return data

    return edit


def _replace(old: bytes, new: bytes, where: str) -> Callable[[str, bytes], bytes | None]:
    return lambda name, data: data.replace(old, new) if name.endswith(where) else data


HOSTILE: dict[str, tuple[Callable[[Path, Path], Path], str]] = {
    "truncated": (
        lambda src, dst: (dst.write_bytes(src.read_bytes()[: src.stat().st_size // 2]), dst)[1],
        r"not a whole zip archive \(truncated, or not a \.pt2 at all\); "
        r"save it again with torch\.export\.save",
    ),
    "not a zip": (
        lambda src, dst: (dst.write_bytes(b'{"schema": "not a program"}'), dst)[1],
        r"not a whole zip archive",
    ),
    "a zip that is not a program": (
        lambda src, dst: (zipfile.ZipFile(dst, "w").writestr("notes.txt", "hello"), dst)[1],
        r"a zip archive but not a torch\.export program .*give a file written by torch\.export\.save",
    ),
    "tampered graph record": (
        lambda src, dst: _rewrite(src, dst, lambda n, d: d[: len(d) // 2] if n.endswith("model.json") else d),
        r"is a damaged torch\.export program \(JSONDecodeError: .*save it again with torch\.export\.save",
    ),
    "tampered weights": (
        lambda src, dst: _rewrite(src, dst, lambda n, d: d[:3] if "weights/weight_0" in n else d),
        r"is a damaged torch\.export program .*save it again",
    ),
    "missing weights": (
        lambda src, dst: _rewrite(src, dst, lambda n, d: None if "weights/weight_0" in n else d),
        r"is a damaged torch\.export program .*save it again",
    ),
    "archive from another torch": (
        lambda src, dst: _rewrite(src, dst, _replace(b"0", b"99", "archive_version")),
        r"was saved in a format this torch \(.*\) does not read: .*load it with the torch that saved it, "
        r"or export the model again with this one",
    ),
    "schema from another torch": (
        lambda src, dst: _rewrite(
            src,
            dst,
            _model_json(lambda d: d.update(schema_version={"major": 99, "minor": 0}, torch_version="9.9.0")),
        ),
        r"was saved in a format this torch \(.*\) does not read \(saved by torch 9\.9\.0\): "
        r".*load it with the "
        r"torch that saved it",
    ),
    "an op never seen": (
        lambda src, dst: _rewrite(
            src,
            dst,
            _replace(b"torch.ops.aten.linear.default", b"torch.ops.mylib.fused.default", "model.json"),
        ),
        r"calls torch\.ops\.mylib\.fused\.default, an op this Python process does not define: import the "
        r"library that registers that custom op, then load the file again",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_file_is_one_clear_sentence(
    case: str,
    saved: tuple[Path, torch.export.ExportedProgram],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    make, message = HOSTILE[case]
    bad = make(saved[0], tmp_path / "model.pt2")
    logger = logging.getLogger("torch.export")
    handlers, propagate = list(logger.handlers), logger.propagate
    with pytest.raises(TraceFormatError, match=message) as info:
        load_trace(bad)
    text = str(info.value)
    assert text.startswith("model.pt2 ") and "\n" not in text and "Traceback" not in text
    assert info.value.__cause__ is None and (
        info.value.__context__ is None or info.value.__suppress_context__
    )
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "deserializ" not in out.err.lower()  # torch's log stays quiet
    assert logger.handlers == handlers and logger.propagate == propagate  # the capture is undone
    assert _get_current_dispatch_mode() is None  # no fake mode left pushed by a half-done load


def test_a_graph_without_module_stacks_is_drawn_flat_with_a_note(tmp_path: Path) -> None:
    torch.manual_seed(0)
    ep = torch.export.export(_Small().eval(), (torch.randn(2, 4),))
    for node in ep.graph.nodes:
        node.meta.pop("nn_module_stack", None)
    path = tmp_path / "flat.pt2"
    torch.export.save(ep, path)
    t = load_trace(path)
    assert t.graph.module_calls == () and t.graph.op_count == 2
    assert t.graph.notes == (NO_STACK_NOTE,)
    assert NO_STACK_NOTE in t.view().notes  # every view says so (the app's notes line shows it)


def test_a_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no program file at"):
        load_trace(tmp_path / "absent.pt2")


class _RunsCode:
    """A pickle that runs code when loaded: it touches ``mark`` and unpickles to an empty tuple (the shape
    torch.export.load expects of a program's example inputs)."""

    def __init__(self, mark: Path) -> None:
        self.mark = mark

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return eval, (f"(__import__('pathlib').Path({str(self.mark)!r}).touch(), ())[1]",)


def test_a_program_whose_pickles_would_run_code_is_refused_unless_trusted(
    saved: tuple[Path, torch.export.ExportedProgram], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """torch.export.load retries example inputs the restricted unpickler refuses with weights_only=False: a
    hostile .pt2 runs code there. load_trace reads the records first and refuses. Trusted, it loads quietly:
    torch's warning about the retry (a malformed log call) stays in the capture, never formatted."""
    import io

    mark = tmp_path / "ran"
    buf = io.BytesIO()
    torch.save(_RunsCode(mark), buf)
    payload = buf.getvalue()

    def swap(name: str, data: bytes) -> bytes:
        return payload if name.endswith("sample_inputs/model.pt") else data

    bad = _rewrite(saved[0], tmp_path / "model.pt2", swap)
    with pytest.raises(
        TraceFormatError,
        match=r"model\.pt2 holds pickled objects \(.*sample_inputs/model\.pt\) "
        r"that torch\.export\.load would unpickle, running whatever code they name: open it only "
        r"if you trust where it came from, with load_trace\(path, allow_pickle=True\)",
    ):
        load_trace(bad)
    assert not mark.exists()  # refused before torch.export.load saw it
    t = load_trace(bad, allow_pickle=True)  # trusted: torch.export.load runs it, as it would anyway
    assert mark.exists() and t.graph.op_count == 2
    err = capsys.readouterr().err
    assert "Logging error" not in err and "Traceback" not in err


def test_a_weight_stored_as_a_pickle_is_refused(
    saved: tuple[Path, torch.export.ExportedProgram], tmp_path: Path
) -> None:
    def pickled_weight(name: str, data: bytes) -> bytes:
        if name.endswith("model_weights_config.json"):
            d = json.loads(data)
            d["config"]["fc.weight"]["use_pickle"] = True
            return json.dumps(d).encode()
        return data

    bad = _rewrite(saved[0], tmp_path / "model.pt2", pickled_weight)
    with pytest.raises(TraceFormatError, match=r"holds pickled objects \(fc\.weight \(weight_0\)\)"):
        load_trace(bad)
