"""Host-header check (DNS rebinding) and request size cap, with real HTTP requests against a real server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
from support_app import start

from bench.dash_client import DashClient, find_store, output_of
from torchvista_dash.app.http import guard
from torchvista_dash.app.server.server import BackgroundServer, make_app
from torchvista_dash.demos import demo_trace


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    srv = start(make_app([demo_trace("mlp")], allowed_hosts=["viz.internal"]))
    try:
        yield srv
    finally:
        srv.stop()


def _click(client: DashClient, store: dict[str, Any], vid: str, host: str | None = None) -> requests.Response:
    if host is not None:
        client.http.headers["Host"] = host
    return client.call(
        '"graph"}.figure',
        "main",
        {"graph.clickData": {"points": [{"customdata": vid}]}, "store.data": store},
        "graph.clickData",
    )


def test_only_the_servers_own_host_names_are_answered(server: BackgroundServer) -> None:
    client = DashClient(server.url)
    store = find_store(client.layout(), "main")
    assert store is not None
    box = next(c.id for c in demo_trace("mlp").graph.module_calls if c.depth == 1)
    for host in (
        f"127.0.0.1:{server.port}",
        f"localhost:{server.port}",
        "LOCALHOST",
        f"viz.internal:{server.port}",
    ):
        r = _click(client, store, box, host)
        assert r.status_code == 200, (host, r.text[:200])
        assert box in output_of(r, "main", "store", "data")["expanded"]
    # a page on attacker.example whose name now resolves to 127.0.0.1 (DNS rebinding) sends its own name
    for host in (f"attacker.example:{server.port}", "127.0.0.1.attacker.example", "localhost.evil"):
        for method, path in (("GET", ""), ("GET", "_dash-layout"), ("POST", "_dash-update-component")):
            r = requests.request(
                method,
                server.url + path,
                headers={"Host": host},
                timeout=30,
                **({"json": {}} if method == "POST" else {}),
            )
            assert r.status_code == 400, (host, path, r.status_code)
            assert "is not allowed" in r.text and "--allow-host" in r.text
            assert "_dash-renderer" not in r.text


def test_requests_over_the_size_cap_are_refused_unread(server: BackgroundServer) -> None:
    client = DashClient(server.url)
    store = find_store(client.layout(), "main")
    big = b'{"pad": "' + b"x" * guard.MAX_REQUEST_BYTES + b'"}'
    r = requests.post(
        server.url + "_dash-update-component",
        data=big,
        timeout=60,
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the cap holds for a streamed body too
        yield b'{"pad": "'
        for _ in range(guard.MAX_REQUEST_BYTES // 65536 + 2):
            yield b"x" * 65536
        yield b'"}'

    try:  # werkzeug reads a chunked body only up to the cap: the cut-off JSON is refused (400) or 413
        r = requests.post(
            server.url + "_dash-update-component",
            data=chunks(),
            timeout=60,
            headers={"Content-Type": "application/json"},
        )
        assert r.status_code in (400, 413)
    except requests.ConnectionError:  # the server may close the connection instead of reading the rest
        pass
    # the server still answers an ordinary click afterwards
    assert _click(client, store, "mod:(root)").status_code == 200


def test_the_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(guard.HOSTS_ENV, "Viz.Example.org, other:8050")
    monkeypatch.setenv(guard.MAX_REQUEST_ENV, "2048")
    srv = start(make_app([demo_trace("mlp")]))
    try:
        assert requests.get(srv.url, headers={"Host": "viz.example.org"}, timeout=30).status_code == 200
        assert requests.get(srv.url, headers={"Host": "other"}, timeout=30).status_code == 200
        assert requests.get(srv.url, headers={"Host": "third"}, timeout=30).status_code == 400
        r = requests.post(
            srv.url + "_dash-update-component",
            data=b"{" + b" " * 4096 + b"}",
            timeout=30,
            headers={"Content-Type": "application/json"},
        )
        assert r.status_code == 413
    finally:
        srv.stop()
    monkeypatch.setenv(guard.MAX_REQUEST_ENV, "lots")
    with pytest.raises(ValueError, match=r"TVD_MAX_REQUEST_BYTES='lots' is not a positive whole number"):
        make_app([demo_trace("mlp")])


def test_host_names_are_compared_without_port_case_or_brackets() -> None:
    assert guard.host_name("[::1]:8050") == "::1"
    assert guard.host_name("LocalHost.:80") == "localhost"
    assert guard.host_name("::1") == "::1"
