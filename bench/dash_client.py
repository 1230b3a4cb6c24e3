"""A ModelGraph's callbacks driven over real HTTP, as the Dash renderer sends them (no browser).

The load benchmark and the server tests replay what a browser sends on a click: the page's layout gives the
first store, ``/_dash-dependencies`` the callbacks, and each request is the renderer's JSON body, posted to
``/_dash-update-component``.
"""

from __future__ import annotations

import json
from typing import Any

import requests

Id = dict[str, str]


def graph_id(aio_id: str, sub: str) -> Id:
    return {"aio_id": aio_id, "component": "ModelGraph", "subcomponent": sub}


def id_key(i: Any) -> str:
    """A component id as Dash writes it in callback maps and responses (dict ids: JSON with sorted keys)."""
    return json.dumps(i, sort_keys=True, separators=(",", ":")) if isinstance(i, dict) else str(i)


def find_store(node: Any, aio_id: str) -> dict[str, Any] | None:
    """The ModelGraph store's data in a layout (or page) JSON tree."""
    if isinstance(node, dict):
        props = node.get("props")
        if isinstance(props, dict) and props.get("id") == graph_id(aio_id, "store"):
            return props.get("data")
        for v in node.values():
            found = find_store(v, aio_id)
            if found is not None:
                return found
    elif isinstance(node, list):
        for v in node:
            found = find_store(v, aio_id)
            if found is not None:
                return found
    return None


class DashClient:
    """One simulated browser tab: a requests session and the server's callback map."""

    def __init__(self, base_url: str, session: requests.Session | None = None, timeout: float = 60.0) -> None:
        self.base = base_url.rstrip("/") + "/"
        self.http = session or requests.Session()
        self.timeout = timeout
        deps = self.http.get(self.base + "_dash-dependencies", timeout=timeout)
        deps.raise_for_status()
        self.deps: list[dict[str, Any]] = deps.json()

    def layout(self, query: str = "") -> Any:
        """The page's layout as the renderer fetches it (the page's query rides in the Referer)."""
        r = self.http.get(
            self.base + "_dash-layout", headers={"Referer": self.base + query}, timeout=self.timeout
        )
        r.raise_for_status()
        return r.json()

    def dep(self, output: str) -> dict[str, Any]:
        """The callback whose output names ``output`` (e.g. "graph\\".figure", "details\\".children")."""
        for d in self.deps:
            if output in d["output"]:
                return d
        raise KeyError(f"no callback writes {output!r}")

    def call(self, output: str, aio_id: str, values: dict[str, Any], changed: str) -> requests.Response:
        """POST one callback of ``aio_id``'s ModelGraph: ``values`` maps "subcomponent.property" to the value
        the browser holds (missing ones are None), ``changed`` is the one that triggered it."""
        d = self.dep(output)

        def concrete(spec: dict[str, Any]) -> dict[str, Any]:
            raw = json.loads(spec["id"]) if spec["id"].startswith("{") else spec["id"]
            cid = (
                {k: (aio_id if v == ["MATCH"] else v) for k, v in raw.items()}
                if isinstance(raw, dict)
                else raw
            )
            key = f"{cid['subcomponent'] if isinstance(cid, dict) else cid}.{spec['property']}"
            return {"id": cid, "property": spec["property"], "value": values.get(key)}

        outs = d["output"].strip(".").split("...") if d["output"].startswith("..") else [d["output"]]
        outputs = []
        for o in outs:
            oid, _, prop = o.rpartition(".")
            raw = json.loads(oid) if oid.startswith("{") else oid
            cid = (
                {k: (aio_id if v == ["MATCH"] else v) for k, v in raw.items()}
                if isinstance(raw, dict)
                else raw
            )
            outputs.append({"id": cid, "property": prop})
        inputs = [concrete(s) for s in d["inputs"]]
        state = [concrete(s) for s in d["state"]]
        sub, _, prop = changed.partition(".")
        body = {
            "output": d["output"],
            "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": inputs,
            "state": state,
            "changedPropIds": [f"{id_key(graph_id(aio_id, sub))}.{prop}"],
        }
        return self.http.post(self.base + "_dash-update-component", json=body, timeout=self.timeout)


def output_of(response: requests.Response, aio_id: str, sub: str, prop: str) -> Any:
    """One output's value in a callback response (KeyError when the callback left it unchanged)."""
    return response.json()["response"][id_key(graph_id(aio_id, sub))][prop]
