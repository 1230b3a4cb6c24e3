"""Op arguments are named by the op's parameter names (``dim``, ``weight``), found from torch itself: the
aten schema, the Python signature, the overload the argument types pick. Real ops, a real HF model."""

from __future__ import annotations

import json

import torch
import torch.nn.functional as F
from support_models import build_llama
from test_app_state import text_of

from torchvista_dash import load_trace, trace_model
from torchvista_dash.app.actions.details import details
from torchvista_dash.app.traces import registry
from torchvista_dash.model.graph import Graph
from torchvista_dash.render.hover import HoverIndex


class Ops(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = torch.cat([x, y], 1)
        b = F.linear(x, self.lin.weight, self.lin.bias)
        c = a.view(4, 4)  # *size given as separate ints
        d = a.view(torch.int32)  # the other view overload: by the argument's type
        e = x + y
        f = torch.max(x, 1).values  # max(input, dim) ...
        g = torch.max(x, y)  # ... and max(input, other)
        h = x.to(torch.device("cpu"))
        i = F.softmax(x, -1)  # a Python function: its signature
        j = torch.einsum("ij,kj->ik", x, y)  # torch.einsum(*args): torch's own stub names it
        k = torch.zeros(2, 3)
        return a, b, c, d, e, f, g, h, i, j, k


def _args(t: object) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    return [(n.name, n.args) for n in t.graph.nodes if n.kind == "op"]  # type: ignore[attr-defined]


def test_real_ops_carry_their_parameter_names() -> None:
    t = trace_model(Ops(), (torch.randn(2, 4), torch.randn(2, 4)))
    f32 = "Tensor[2×4 float32]"
    assert _args(t) == [
        ("cat", (("tensors", f"[{f32}, {f32}]"), ("dim", "1"))),
        ("linear", (("input", f32), ("weight", "Tensor[3×4 float32]"), ("bias", "Tensor[3 float32]"))),
        ("view", (("self", "Tensor[2×8 float32]"), ("size", "(4, 4)"))),
        ("view", (("self", "Tensor[2×8 float32]"), ("dtype", "int32"))),
        ("add", (("self", f32), ("other", f32))),
        ("max", (("input", f32), ("dim", "1"))),
        ("max", (("input", f32), ("other", f32))),
        ("to", (("self", f32), ("device", "cpu"))),
        ("softmax", (("input", f32), ("dim", "-1"), ("_stacklevel", "3"), ("dtype", "None"))),
        ("einsum", (("equation", "'ij,kj->ik'"), ("operands[0]", f32), ("operands[1]", f32))),
        ("zeros", (("size", "(2, 3)"),)),
    ]
    # the edges still say which argument each tensor fed, by position
    (lin,) = [n for n in t.graph.nodes if n.name == "linear"]
    assert sorted(e.dst_arg for e in t.graph.edges if e.dst == lin.id) == [0, 1, 2]


def test_names_do_not_depend_on_call_order_and_the_json_is_deterministic() -> None:
    inputs = (torch.randn(2, 4), torch.randn(2, 4))
    torch.manual_seed(0)
    first = trace_model(Ops(), inputs).graph.to_bytes()
    torch.manual_seed(0)
    again = trace_model(Ops(), inputs).graph.to_bytes()  # every name now comes from the caches
    assert first == again


def test_a_trace_file_with_positional_keys_still_loads(tmp_path) -> None:
    t = trace_model(Ops(), (torch.randn(2, 4), torch.randn(2, 4)))
    data = json.loads(t.to_json())
    for node in data["nodes"]:  # how files written before the names read
        node["args"] = [[str(i), v] for i, (_, v) in enumerate(node["args"])]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    old = load_trace(path)
    (cat,) = [n for n in old.graph.nodes if n.name == "cat"]
    assert cat.args == (("0", "[Tensor[2×4 float32], Tensor[2×4 float32]]"), ("1", "1"))
    tid = registry.register(old)
    assert "dim" not in text_of(details(tid, cat.id)) and "Tensor[" not in text_of(details(tid, cat.id))


def test_a_hugging_face_models_details_and_hover_name_the_arguments() -> None:
    model, inputs, kwargs = build_llama()
    t = trace_model(model, inputs, kwargs)
    g: Graph = t.graph
    numbered = {(n.name, k) for n in g.nodes if n.kind == "op" for k, _ in n.args if k.isdigit()}
    assert numbered == set()  # every argument of every op named
    tid = registry.register(t)
    sdpa = next(n for n in g.nodes if n.name == "scaled_dot_product_attention")
    text = text_of(details(tid, sdpa.id))
    for name in ("query", "key", "value", "attn_mask", "dropout_p"):
        assert name in text
    vg = t.view(depth=None, fold_repeats=False)
    linear = next(vn for vn in vg.nodes if vn.id in g.node_by_id and g.node_by_id[vn.id].name == "linear")
    hover = HoverIndex(g, vg).node_text(linear)
    assert "input=Tensor[" in hover and "weight=Tensor[" in hover


class Private(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = F.softmax(x, dim=-1)  # torch fills in its private _stacklevel=3
        samples = torch.full((1, 2, 2), 0.5)
        p = F.fractional_max_pool2d(x.view(1, 2, 4, 4), 2, output_size=2, _random_samples=samples)
        return s, p


def test_private_torch_arguments_are_left_out_of_details_and_hover_unless_they_carry_a_tensor() -> None:
    t = trace_model(Private(), torch.randn(2, 16))
    g: Graph = t.graph
    softmax = next(n for n in g.nodes if n.name == "softmax")
    assert ("_stacklevel", "3") in softmax.args  # the trace keeps what torch passed
    tid = registry.register(t)
    text = text_of(details(tid, softmax.id))
    assert "dim" in text and "-1" in text and "_stacklevel" not in text
    vg = t.view(depth=None, fold_repeats=False)
    vn = next(v for v in vg.nodes if v.id == softmax.id)
    hover = HoverIndex(g, vg).node_text(vn)
    assert "dim=-1" in hover and "_stacklevel" not in hover
    pool = next(n for n in g.nodes if n.name == "fractional_max_pool2d")
    assert "_random_samples" in text_of(details(tid, pool.id))  # a tensor given to a private parameter: shown
    assert "_stacklevel" in t.to_json()  # saved and loaded like every other argument
