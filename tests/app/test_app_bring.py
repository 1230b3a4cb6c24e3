"""Traces brought to a running server: dropped on the page (a real Chromium choosing the file), pushed over
HTTP (token or none), written into a served folder later; configure(store=) in a user's own app."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from support_app import start, wait_drawn
from support_graphs import stack_graph

import torchvista_dash
from torchvista_dash.app.http import push
from torchvista_dash.app.server.gallery import folder_gallery
from torchvista_dash.app.server.server import make_app
from torchvista_dash.app.traces import registry, shared
from torchvista_dash.demos import demo_trace
from torchvista_dash.traced import Trace

TOKEN = "bring-token"


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    srv = start(make_app([demo_trace("mlp")], push_token=TOKEN))
    try:
        yield srv.url
    finally:
        srv.stop()


def test_a_trace_dropped_on_the_page_is_shown_with_its_link(
    served: str, page: Any, tmp_path: Path, dot_binary: str
) -> None:
    trace = Trace(stack_graph(4, d=50))
    trace.save(tmp_path / "mine.json")
    page.goto(served)
    wait_drawn(page, "main")
    page.set_input_files("#tvd-upload input[type=file]", str(tmp_path / "mine.json"))
    page.wait_for_function("(id) => location.search === '?trace=' + id", arg=trace.id, timeout=60_000)
    wait_drawn(page, f"trace-{trace.id}")
    assert page.inner_text("#tvd-upload-note").endswith(f"?trace={trace.id}")
    # the link opens in a fresh page (a colleague's)
    other = page.context.new_page()
    other.goto(f"{served}?trace={trace.id}")
    wait_drawn(other, f"trace-{trace.id}")
    other.close()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("notes.json", b'{"hello": 1}', "not a torchvista_dash trace"),
        ("broken.json", b'{"schema": ', "invalid JSON"),
        ("model.pt2", b"PK\x03\x04zipped program", ".pt2 program"),
    ],
)
def test_a_bad_file_dropped_on_the_page_gets_one_message(
    served: str, page: Any, tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    (tmp_path / name).write_bytes(content)
    page.goto(served)
    wait_drawn(page, "main")
    page.set_input_files("#tvd-upload input[type=file]", str(tmp_path / name))
    page.wait_for_selector(f"#tvd-upload-note >> text={message}", timeout=60_000)
    assert page.url.rstrip("/") == served.rstrip("/")  # nothing else happened


def test_a_file_over_the_upload_cap_is_refused_with_the_way_to_push_it() -> None:
    import base64

    big = base64.b64encode(b" " * (push.upload_cap() + 10)).decode()
    with pytest.raises(
        push.PushError, match=r"over 3\.0 MB: push bigger traces with `python -m torchvista_dash"
    ):
        push.trace_from_upload("data:application/json;base64," + big, "huge.json")


def test_push_takes_the_right_token_only(served: str, tmp_path: Path, dot_binary: str) -> None:
    trace = Trace(stack_graph(3, d=51))
    body = gzip.compress(trace.graph.to_bytes())
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        r = requests.post(served + "_tvd/push", data=body, headers={**headers, **auth}, timeout=30)
        assert r.status_code == 403 and "wrong push token" in r.json()["error"]
        with pytest.raises(registry.UnknownTrace):
            registry.get(trace.id)  # nothing stored
    zipped = requests.post(
        served + "_tvd/push", data=b"PK\x03\x04...", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
    )
    assert zipped.status_code == 400 and "never accepted over HTTP" in zipped.json()["error"]
    assert trace.push(served, token=TOKEN) == f"{served}?trace={trace.id}"
    assert registry.get(trace.id).id == trace.id
    with pytest.raises(push.PushError, match="HTTP 403"):
        Trace(stack_graph(3, d=52)).push(served, token="nope")


def test_a_server_without_a_token_refuses_every_push(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(push.PUSH_TOKEN_ENV, raising=False)
    srv = start(make_app([demo_trace("mlp")]))
    try:
        r = requests.post(
            srv.url + "_tvd/push",
            data=demo_trace("mlp").graph.to_bytes(),
            headers={"Authorization": "Bearer anything"},
            timeout=30,
        )
        assert r.status_code == 403 and "takes no pushes" in r.json()["error"]
    finally:
        srv.stop()


def test_a_trace_written_into_a_served_folder_appears_without_a_restart(tmp_path: Path) -> None:
    demo_trace("mlp").save(tmp_path / "a.json")
    gallery, skipped = folder_gallery(tmp_path)
    assert skipped == []
    srv = start(make_app(gallery=gallery, title=gallery.title))
    try:

        def dropdown() -> list[str]:
            text = requests.get(srv.url + "_dash-layout", headers={"Referer": srv.url}, timeout=60).text
            return [o["value"] for o in _options(json.loads(text))]

        assert dropdown() == ["a.json"]
        (tmp_path / "partial.json").write_text('{"schema": ')  # a file still being written
        demo_trace("gpt").save(tmp_path / "b.json")
        time.sleep(1.1)  # the folder is looked at again at most once a second
        assert dropdown() == ["a.json", "b.json"]
        demo_trace("transformer").save(tmp_path / "partial.json")  # now finished
        (tmp_path / "a.json").unlink()
        time.sleep(1.1)
        assert dropdown() == ["b.json", "partial.json"]
    finally:
        srv.stop()


def _options(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        props = node.get("props", {})
        if isinstance(props, dict) and props.get("id") == "tvd-demo":
            return list(props["options"])
        return [o for v in node.values() for o in _options(v)]
    if isinstance(node, list):
        return [o for v in node for o in _options(v)]
    return []


def test_configure_names_the_store_of_a_users_app(tmp_path: Path) -> None:
    try:
        torchvista_dash.configure(store=f"file://{tmp_path / 'store'}")
        assert shared.current().shared and (tmp_path / "store" / "data").is_dir()
        trace = Trace(stack_graph(3, d=53))
        registry.register(trace)
        assert any((tmp_path / "store" / "data").iterdir())  # published
        with pytest.raises(shared.StoreError, match="unknown trace store"):
            torchvista_dash.configure(store="ftp://nowhere")
    finally:
        torchvista_dash.configure(store=None)
    assert not shared.current().shared
