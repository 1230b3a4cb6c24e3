"""The CLI on saved torch.export programs: `serve model.pt2`, `export model.pt2 -o m.svg`,
`diff a.pt2 b.json`; a bad program is one line; nothing the server reads over HTTP or from a folder of
traces is ever given to torch.export.load."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import torch
from support_app import served_url

from torchvista_dash.app.server.gallery import folder_gallery
from torchvista_dash.cli import main
from torchvista_dash.demos import build_demo, demo_trace

PACKAGE = Path(__file__).resolve().parent.parent / "torchvista_dash"


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model, inputs = build_demo("mlp")
    path = tmp_path_factory.mktemp("programs") / "mlp.pt2"
    torch.export.save(torch.export.export(model, inputs), path)
    return path


def test_export_and_diff_a_program(program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m.svg"
    assert main(["export", str(program), "-o", str(out)]) == 0
    svg = out.read_text()
    assert svg.startswith("<?xml") and "MLP" in svg
    live = tmp_path / "live.json"
    demo_trace("mlp").save(live)
    assert main(["diff", str(program), str(live), "-o", str(tmp_path / "d.svg")]) == 0
    said = capsys.readouterr().out
    assert f"{program} → {live}:" in said and (tmp_path / "d.svg").stat().st_size > 0


def test_a_bad_program_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "cut.pt2"
    bad.write_bytes(b"PK\x03\x04 not really")
    assert main(["export", str(bad), "-o", str(tmp_path / "x.svg")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: cut.pt2 is not a readable torch.export program: it is not a whole zip archive (truncated, or "
        "not a .pt2 at all); save it again with torch.export.save(exported_program, 'model.pt2')"
    )
    assert main(["export", str(tmp_path / "gone.pt2"), "-o", str(tmp_path / "x.svg")]) == 2
    assert "no such program file" in capsys.readouterr().err


def test_serve_a_program(program: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchvista_dash", "serve", str(program), "--port", "0"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(proc)
        layout = requests.get(url + "_dash-layout", headers={"Referer": url}, timeout=60)
        assert layout.status_code == 200
        assert '"subcomponent":"graph"' in layout.text and "MLP" in layout.text
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_folder_gallery_never_loads_a_program(
    program: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only ``*.json`` files are read, and a program renamed to ``.json`` is refused as JSON: the contents
    never choose torch.export.load."""
    demo_trace("mlp").save(tmp_path / "ok.json")
    (tmp_path / "program.pt2").write_bytes(program.read_bytes())
    (tmp_path / "disguised.json").write_bytes(program.read_bytes())

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("torch.export.load was called")

    monkeypatch.setattr(torch.export, "load", refuse)
    gallery, skipped = folder_gallery(tmp_path)
    assert list(gallery.labels) == ["ok.json"]
    assert len(skipped) == 1 and skipped[0].startswith("disguised.json: not a torchvista_dash trace")


def test_nothing_in_the_app_reads_programs() -> None:
    """The app (every HTTP path, uploads included) never imports the program reader."""
    for path in (PACKAGE / "app").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("torchvista_dash.frontends"), path
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("load_program", "from_exported"), path


def test_the_gallery_has_an_exported_program_demo(tmp_path: Path) -> None:
    """`serve` (the gallery): ``?demo=gpt-export`` draws the GPT demo from its ExportedProgram, built in code
    at startup of that demo (nothing downloaded)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchvista_dash", "serve", "--port", "0"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(proc)
        page = url + "?demo=gpt-export"
        layout = requests.get(url + "_dash-layout", headers={"Referer": page}, timeout=120)
        assert layout.status_code == 200
        text = layout.text
        assert "GPT-style decoder, from torch.export" in text and "GPTBlock" in text
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_program_returning_a_librarys_type_names_the_import_it_needs(tmp_path: Path) -> None:
    """A Hugging Face program's output is a transformers model-output class: a fresh process that has not
    imported transformers cannot read it, and is told which module to import; `--import` it and it reads."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=16)).eval()
    ids = torch.randint(0, 64, (1, 4))
    path = tmp_path / "gpt2.pt2"
    torch.export.save(torch.export.export(model, (), {"input_ids": ids, "use_cache": False}), path)
    run = [sys.executable, "-m", "torchvista_dash", "export", str(path), "-o", str(tmp_path / "g.svg")]
    without = subprocess.run(run, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert without.returncode == 2
    assert without.stderr.strip() == (
        "error: gpt2.pt2 returns or takes a transformers.modeling_outputs.CausalLMOutputWithCrossAttentions, "
        "a type this Python process does not know yet: import transformers.modeling_outputs first "
        "(in Python: import transformers.modeling_outputs; on the command line: "
        "--import transformers.modeling_outputs), then load the file again"
    )
    with_import = subprocess.run(
        [*run, "--import", "transformers.modeling_outputs"], capture_output=True, text=True, timeout=300
    )
    assert with_import.returncode == 0, with_import.stderr
    assert "GPT2LMHeadModel" in (tmp_path / "g.svg").read_text()
