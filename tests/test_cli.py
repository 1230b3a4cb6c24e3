"""The CLI: `serve` on each TARGET form answers HTTP 200 with the graph; bad targets fail clearly;
`export`."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from support_app import served_url

from torchvista_dash import load_trace
from torchvista_dash.cli import main
from torchvista_dash.demos import demo_trace

MODELS = textwrap.dedent("""
    import torch
    from torch import nn

    class Scaler(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 3)

        def forward(self, x, scale=1.0):
            return self.proj(x) * scale

    def example():
        return Scaler(), (torch.randn(2, 4),)

    def with_kwargs():
        return Scaler(), (torch.randn(2, 4),), {"scale": 2.0}

    def wrong_shape():
        return Scaler()

    def not_a_model():
        return "model", (torch.randn(2, 4),)

    def bad_kwargs():
        return Scaler(), (torch.randn(2, 4),), [1]

    def raises():
        return _load_weights()

    def _load_weights():
        raise ValueError("no weights here")

    class Broken(nn.Module):
        def forward(self, x):
            return torch.cat([x, x[:, :1].T])

    def broken():
        return Broken(), (torch.randn(2, 4),)

    NOT_CALLABLE = 3
""")


@pytest.fixture()
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "tvd_cli_models.py").write_text(MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("tvd_cli_models", None)
    return tmp_path


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ---- bad targets: one clear line, non-zero exit ------------------------------------------
@pytest.mark.parametrize(
    "target, message",
    [
        ("missing/trace.json", "no such trace file: missing/trace.json"),
        ("nothing_like_this", "don't know what 'nothing_like_this' is"),
        ("no_such_module_xyz:fn", "cannot import module 'no_such_module_xyz'"),
        ("tvd_cli_models:nope", "module 'tvd_cli_models' has no attribute 'nope'"),
        ("tvd_cli_models:NOT_CALLABLE", "is a int, not a function"),
        (
            "tvd_cli_models:wrong_shape",
            "must return (model, inputs) or (model, args, kwargs); it returned a Scaler",
        ),
        ("tvd_cli_models:not_a_model", "with an nn.Module first; the first item is a str"),
        ("tvd_cli_models:bad_kwargs", "the third (kwargs) must be a dict, not a list"),
        ("tvd_cli_models:raises", "raised ValueError: no weights here"),
        ("tvd_cli_models:", "write it as package.module:function"),
    ],
)
def test_bad_targets_fail_with_a_clear_error(
    target: str, message: str, models_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_main(["export", target, "-o", str(models_dir / "x.json")], capsys)
    assert code == 2
    if target.endswith(":raises"):  # the user's own traceback first, then the one error line
        err = err.strip().splitlines()[-1]
    assert err.startswith("error: ") and message in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (models_dir / "x.json").exists()


def test_a_user_function_that_raises_shows_its_traceback(models_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "torchvista_dash", "export", "tvd_cli_models:raises", "-o", "x.svg"],
        cwd=models_dir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and lines[0] == "Traceback (most recent call last):", proc.stderr
    assert lines[-1] == "error: tvd_cli_models:raises() raised ValueError: no weights here"
    assert lines[-2] == "ValueError: no weights here"
    frames = [ln for ln in lines if ln.lstrip().startswith("File ")]
    assert [f.split(", in ")[-1] for f in frames] == ["raises", "_load_weights"], (
        frames
    )  # the user's frames only
    assert all("tvd_cli_models.py" in f for f in frames)


@pytest.mark.parametrize("port", ["70000", "-1", "65536"])
def test_a_port_out_of_range_is_one_line(port: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "torchvista_dash", "serve", "mlp", "--port", port],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stderr.strip() == (
        f"error: --port {port} is not a port number: give one from 0 to 65535 (0 picks a free one)"
    )


def test_the_target_is_checked_before_the_port(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        code, _, err = run_main(["serve", "nosuch.json", "--port", str(port)], capsys)
    assert code == 2 and err.startswith("error: no such trace file: nosuch.json"), err


def test_a_failed_models_warning_is_printed_once(models_dir: Path) -> None:
    def run(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "torchvista_dash", "export", *args],
            cwd=models_dir,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    for err in (run("tvd_cli_models:broken", "-o", "b.json"), run("b.json", "-o", "b.svg")):
        assert err.count("forward pass failed") == 1, err
        assert (
            err.startswith("warning: the forward pass failed (RuntimeError") and len(err.splitlines()) == 1
        ), err


def test_a_file_that_is_not_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text(json.dumps({"hello": 1}))
    code, _, err = run_main(["export", str(bad), "-o", str(tmp_path / "x.html")], capsys)
    assert code == 2 and "no 'schema' field" in err


def test_port_in_use_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        code, _, err = run_main(["serve", "mlp", "--port", str(port)], capsys)
    assert code == 2 and f"port {port} is already in use on 127.0.0.1" in err and "--port" in err


def test_export_formats_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(["export", "mlp", "-o", str(tmp_path / "m.json")], capsys)[0] == 0
    assert load_trace(tmp_path / "m.json").graph.to_json() == demo_trace("mlp").graph.to_json()
    assert (
        run_main(
            ["export", str(tmp_path / "m.json"), "-o", str(tmp_path / "m.svg"), "--depth", "-1"], capsys
        )[0]
        == 0
    )
    svg = (tmp_path / "m.svg").read_text()
    assert "<svg" in svg and "linear" in svg  # depth -1: every op drawn
    assert run_main(["export", "mlp", "-o", str(tmp_path / "m.html")], capsys)[0] == 0
    assert "Plotly.newPlot" in (tmp_path / "m.html").read_text()
    code, _, err = run_main(["export", "mlp", "-o", str(tmp_path / "m.gif")], capsys)
    assert code == 2 and "unsupported export format 'gif'" in err and "svg" in err
    code, _, err = run_main(["export", "mlp", "-o", str(tmp_path / "nodir" / "m.svg")], capsys)
    assert code == 2 and "does not exist" in err


def test_export_of_a_failing_model_warns_and_writes_the_partial_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_main(["export", "broken", "-o", str(tmp_path / "b.json")], capsys)
    assert code == 0 and "forward pass failed (RuntimeError" in err
    with pytest.warns(UserWarning, match="forward pass failed"):
        assert load_trace(tmp_path / "b.json").graph.error is not None


# ---- serve: real processes, real HTTP ------------------------------------------------------
def _spawn(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "torchvista_dash", "serve", *args, "--port", "0"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture()
def servers(tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[str]]]:
    (tmp_path / "tvd_cli_models.py").write_text(MODELS)
    demo_trace("mlp").save(tmp_path / "saved.json")
    procs = {
        "gallery": _spawn([], tmp_path),
        "file": _spawn(["saved.json"], tmp_path),
        "function": _spawn(["tvd_cli_models:with_kwargs"], tmp_path),
        "demo": _spawn(["unet"], tmp_path),
    }
    try:
        yield procs
    finally:
        for p in procs.values():
            p.terminate()
        for p in procs.values():
            p.wait(timeout=10)


def test_serve_answers_with_the_graph_for_every_target_form(
    servers: dict[str, subprocess.Popen[str]],
) -> None:
    expect = {"gallery": "MLP", "file": "MLP", "function": "Scaler", "demo": "U-Net"}
    urls = {name: served_url(proc) for name, proc in servers.items()}
    for name, url in urls.items():
        assert url.startswith("http://127.0.0.1:")  # --host defaults to 127.0.0.1
        page = requests.get(url, timeout=30)
        assert page.status_code == 200 and "_dash-renderer" in page.text
        layout = requests.get(url + "_dash-layout", headers={"Referer": url}, timeout=60)
        assert layout.status_code == 200
        text = layout.text
        assert '"subcomponent":"graph"' in text and '"nodes:labels"' in text, name  # a drawn figure
        assert expect[name] in text, name
    deps = requests.get(urls["gallery"] + "_dash-dependencies", timeout=30).json()
    assert any("ModelGraph" in d["output"] for d in deps)  # the component's callbacks are there


def test_serving_a_failing_model_warns_once_and_the_page_shows_the_error(tmp_path: Path) -> None:
    """`serve module:broken`: one warning line in the terminal (not one per page load), the error in the
    page."""
    (tmp_path / "tvd_cli_models.py").write_text(MODELS)
    proc = _spawn(["tvd_cli_models:broken"], tmp_path)
    try:
        url = served_url(proc)
        for _ in range(2):  # two visitors
            layout = requests.get(url + "_dash-layout", headers={"Referer": url}, timeout=60)
            assert layout.status_code == 200 and "RuntimeError" in layout.text
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert err.count("forward pass failed") == 1, err
    assert err.startswith("warning: the forward pass failed (RuntimeError"), err


def test_bad_target_exits_non_zero_in_a_real_process(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "torchvista_dash", "serve", "nowhere/t.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "error: no such trace file: nowhere/t.json (save one with trace.save('t.json') or "
        "`python -m torchvista_dash export TARGET -o t.json`)"
    )


# ---- serve DIR: a gallery of saved traces, in a real browser ---------------------------------
@pytest.mark.browser
def test_serve_a_folder_of_traces_as_a_gallery_with_view_options(tmp_path: Path, page: Any) -> None:
    from support_app import css_id, ids_drawn, wait_drawn

    folder = tmp_path / "traces"
    folder.mkdir()
    demo_trace("mlp").save(folder / "a_mlp.json")
    demo_trace("unet").save(folder / "b_unet.json")
    demo_trace("broken").save(folder / "c_broken.json")
    (folder / "notes.json").write_text('{"hello": 1}')
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "torchvista_dash",
            "serve",
            str(folder),
            "--port",
            "0",
            "--theme",
            "dark",
            "--rankdir",
            "LR",
            "--depth",
            "0",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(proc)
        page.goto(url)
        wait_drawn(page, "gallery")
        assert "MLP" in page.inner_text(".tvd-header")
        assert ids_drawn(page, "gallery", "nodes:labels").count("mod:(root)") == 1  # --depth 0: one box
        assert page.locator(css_id("gallery", "theme") + " input[value=dark]").is_checked()  # --theme dark
        assert page.locator(css_id("gallery", "direction") + " input[value=LR]").is_checked()  # --rankdir LR
        page.click("#tvd-demo")
        options = page.get_by_role("option").all_inner_texts()
        assert [o.split(" — ")[0] for o in options if ".json" in o] == [
            "a_mlp.json",
            "b_unet.json",
            "c_broken.json",
        ]
        page.get_by_role("option", name="b_unet.json — U-Net", exact=False).click()
        page.wait_for_function("() => document.querySelector('.tvd-header').innerText.includes('U-Net')")
        page.goto(url + "?file=c_broken.json")  # a link to one file
        page.wait_for_function(
            "() => (document.querySelector('.tvd-header .tvd-error') || {}).innerText"
            " && document.querySelector('.tvd-header .tvd-error').innerText.includes('Sizes')"
        )
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert err.startswith("warning: skipping notes.json: "), err  # a file that is not a trace is named once
    assert err.count("warning") == 1, err


def test_serve_a_folder_without_traces_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text("[]")
    proc = subprocess.run(
        [sys.executable, "-m", "torchvista_dash", "serve", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stderr.strip() == (
        f"error: no trace files in {tmp_path} (1 .json files, none a trace): save traces there with "
        "trace.save('name.json')"
    )


# ---- export when Graphviz is missing, failing or too slow: one `error:` line --------------------------
@pytest.mark.parametrize(
    "script, env, message",
    [
        (None, {"TVD_DOT": "/nowhere/dot"}, "is not an executable Graphviz dot"),
        (
            "cat > /dev/null; echo 'Error: syntax error in line 1' >&2; exit 1",
            {},
            "Graphviz dot failed (exit code 1): Error: syntax error in line 1",
        ),
        ("sleep 30", {"TVD_DOT_TIMEOUT": "0.5"}, "ran past its time budget of 0.5 s"),
        (None, {"TVD_DOT_TIMEOUT": "abc"}, "$TVD_DOT_TIMEOUT='abc' is not a number of seconds above 0"),
    ],
)
def test_export_graphviz_trouble_is_one_line(
    script: str | None,
    env: dict[str, str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if script is not None:
        exe = tmp_path / "dot"
        exe.write_text(f"#!/bin/sh\n{script}\n")
        exe.chmod(0o755)
        monkeypatch.setenv("TVD_DOT", str(exe))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    width = 20 + len(message) % 7  # a view no earlier test laid out (the layout cache is process-wide)
    from torchvista_dash import layout

    layout.clear_cache()  # and its pieces, cached by structure, which other widths share
    (tmp_path / "m.py").write_text(
        "import torch\nfrom torch import nn\n"
        f"def make():\n    return nn.Sequential(nn.Linear({width}, 2)), torch.rand(1, {width})\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    started = time.monotonic()
    code, _, err = run_main(["export", "m:make", "-o", str(tmp_path / "out.svg")], capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert time.monotonic() - started < 25 and not (tmp_path / "out.svg").exists()


# ---- --color-by -------------------------------------------------------------------------------
def test_export_colours_by_a_cost_and_names_a_missing_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from torchvista_dash.render.colorby import step_colours

    demo_trace("gpt").save(tmp_path / "gpt.json")
    code, out, _ = run_main(
        ["export", str(tmp_path / "gpt.json"), "-o", str(tmp_path / "g.svg"), "--color-by", "flops"], capsys
    )
    assert code == 0 and "wrote" in out
    svg = (tmp_path / "g.svg").read_text()
    assert any("#" + "".join(f"{int(v):02x}" for v in c[4:-1].split(",")) in svg for c in step_colours())
    code, _, err = run_main(
        ["export", str(tmp_path / "gpt.json"), "-o", str(tmp_path / "t.svg"), "--color-by", "time"], capsys
    )
    assert code == 2 and "error: color_by='time': this trace has no time recorded; trace with" in err


def test_export_root_draws_one_module_as_its_own_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo_trace("gpt").save(tmp_path / "gpt.json")
    args = ["export", str(tmp_path / "gpt.json"), "-o", str(tmp_path / "mlp.svg"), "--depth", "-1"]
    code, out, _ = run_main([*args, "--root", "blocks.1.mlp"], capsys)
    assert code == 0 and "wrote" in out
    svg = (tmp_path / "mlp.svg").read_text()
    assert "gelu" in svg and "softmax" not in svg  # the MLP's ops, not its block's attention
    code, _, err = run_main([*args, "--root", "blocks.9"], capsys)
    assert code == 2 and "root 'blocks.9' is not a module of GPT-style decoder" in err


def test_export_with_values_colours_by_a_value_statistic_with_a_colour_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "abs.html"
    code, text, _ = run_main(["export", "gpt", "--values", "-o", str(out), "--color-by", "absmax"], capsys)
    assert code == 0 and "wrote" in text
    assert "largest |value|" in out.read_text()  # the colour bar's title
    code, _, err = run_main(["export", "gpt", "-o", str(tmp_path / "z.svg"), "--color-by", "zeros"], capsys)
    assert code == 2 and "values=True" in err
    code, _, _ = run_main(["export", "gpt", "--values", "-o", str(tmp_path / "v.json")], capsys)
    assert code == 0 and '"values"' in (tmp_path / "v.json").read_text()


def test_export_style_rules_colour_boxes_by_name_and_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "styled.svg"
    args = [
        "export",
        "gpt",
        "-o",
        str(out),
        "--style",
        "re:.*attn.*=#e45756",
        "--style",
        "cls:Linear=#4c78a8",
    ]
    code, text, _ = run_main(args, capsys)
    assert code == 0 and "wrote" in text
    svg = out.read_text().lower()
    assert "#4c78a8" in svg  # lm_head, a Linear
    code, _, err = run_main(["export", "gpt", "-o", str(out), "--style", "attn=#e45756"], capsys)
    assert code == 2 and "must start with 're:'" in err


def test_diff_of_two_value_traces_says_where_they_first_diverge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch
    from support_models import NaNTower

    from torchvista_dash import trace_model

    torch.manual_seed(0)
    model, x = NaNTower(layers=4, broken=99).eval(), torch.randn(2, 16)
    trace_model(model, x, values=True).save(tmp_path / "a.json")
    with torch.no_grad():
        model.layers[2].fc.bias[0] += 1.0
    trace_model(model, x, values=True).save(tmp_path / "b.json")
    args = ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(tmp_path / "d.json")]
    code, out, _ = run_main(args, capsys)
    assert code == 0 and "values: first divergence at linear (" in out and "in layers.2.fc" in out


def test_help_says_what_the_commands_do_and_what_a_target_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "a saved trace or a model function, served or exported; diff A B compares two of them." in out
    assert "TARGET is one of: a saved trace (trace.json), package.module:function" in out and "``" not in out


# ---- on/off view options: --no-fold-repeats, --show-params (options.flag_options) ----------------
def test_help_lists_the_on_off_view_options(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("serve", "export", "diff"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert "--fold-repeats, --no-fold-repeats" in out and "--show-params, --no-show-params" in out, (
            command
        )
        assert "--no-fold-repeats draws each layer on its own (default: on)" in out, command


def test_export_unfolds_repeats_and_shows_parameters_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = {name: tmp_path / f"{name}.svg" for name in ("folded", "unfolded", "ops", "params")}
    for name, flags in (
        ("folded", []),
        ("unfolded", ["--no-fold-repeats"]),
        ("ops", ["--depth", "all"]),
        ("params", ["--depth", "all", "--show-params"]),
    ):
        assert run_main(["export", "gpt", "-o", str(out[name]), *flags], capsys)[0] == 0
    a, b = out["folded"].read_text(), out["unfolded"].read_text()
    assert "×4" in a and "blocks.2" not in a  # the default folds the four blocks into one box
    assert "blocks.2" in b and "×4" not in b  # each block drawn on its own
    boxes = {name: out[name].read_text().count('class="node"') for name in ("ops", "params")}
    assert boxes["params"] > boxes["ops"], boxes  # parameters and constants as boxes of their own


@pytest.mark.browser
def test_serve_no_fold_repeats_draws_and_prepares_the_unfolded_view(tmp_path: Path, page: Any) -> None:
    """`serve gpt --no-fold-repeats`: the page draws every block, its toolbar says so, and the server laid
    that view out before the first browser came (the page's first picture, drawn from the server's cache, is
    it)."""
    from support_app import css_id, ids_drawn, wait_drawn

    proc = _spawn(["gpt", "--no-fold-repeats"], tmp_path)
    try:
        url = served_url(proc)
        deadline = (
            time.time() + 90
        )  # a page comes at once; its first picture once the warm-up has laid it out
        while (
            "tvd-first-picture" not in (html_page := requests.get(url, timeout=60).text)
            and time.time() < deadline
        ):
            time.sleep(0.5)
        pictures = [
            requests.get(url.rstrip("/") + src, timeout=60).text  # the picture, inline or by URL
            for src in re.findall(r'<img src="(/_tvd/picture/[^"]+)"', html_page)
        ]
        drawn = html_page + "".join(pictures)
        assert "tvd-first-picture" in html_page and "blocks.2" in drawn and "×4" not in drawn
        page.goto(url)
        wait_drawn(page, "main")
        drawn = ids_drawn(page, "main", "nodes:labels")
        assert {"mod:blocks.0", "mod:blocks.3"} <= set(drawn) and not any(
            i.startswith("fold:") for i in drawn
        )
        assert not page.locator(css_id("main", "options") + " input[value=fold]").is_checked()
        page.goto(url + "?fold_repeats=1")  # the page's address still overrides it
        wait_drawn(page, "main")
        assert "fold:mod:blocks.0" in ids_drawn(page, "main", "nodes:labels")
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


def test_a_server_stopped_with_sigterm_leaves_no_graphviz_running(tmp_path: Path) -> None:
    # the real dot, started 30 s late: the server is stopped while its first page's layout still runs
    pids = tmp_path / "dot.pids"
    slow_dot = tmp_path / "slow_dot"
    slow_dot.write_text(
        f"#!{sys.executable}\nimport os, shutil, sys, time\n"
        f"open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
        "time.sleep(30)\nos.execv(shutil.which('dot'), ['dot', *sys.argv[1:]])\n"
    )
    slow_dot.chmod(0o755)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TVD_DOT": str(slow_dot)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchvista_dash", "serve", "unet", "--port", "0"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(proc)
        try:
            requests.get(url, timeout=2)  # its first view goes to a layout that will not end soon
        except requests.exceptions.Timeout:
            pass
        deadline = time.monotonic() + 20
        while not (pids.exists() and pids.read_text().strip()):
            assert time.monotonic() < deadline, "no dot was started"
            time.sleep(0.1)
        started = [int(p) for p in pids.read_text().split()]
        assert all(os.path.exists(f"/proc/{p}") for p in started)  # laying out (or waiting to)
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        deadline = time.monotonic() + 5
        while any(os.path.exists(f"/proc/{p}") for p in started):
            assert time.monotonic() < deadline, "a dot outlived its server"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
