"""Real models (Hugging Face from tiny configs, nn.Transformer, LSTM): shapes agree with forward hooks,
every output is reachable from an input, global state is restored."""

from __future__ import annotations

import warnings
from collections import deque
from typing import Any

import pytest
import torch
from support_models import REAL_MODELS, assert_same_model_state, global_state, model_state

from torchvista_dash import trace_model
from torchvista_dash.model.graph import Graph


def _flat_shapes(obj: Any, out: list[tuple[int, ...]], depth: int = 0) -> list[tuple[int, ...]]:
    if isinstance(obj, torch.Tensor):
        out.append(tuple(obj.shape))
    elif depth < 6 and isinstance(obj, dict):
        for v in obj.values():
            _flat_shapes(v, out, depth + 1)
    elif depth < 6 and isinstance(obj, (list, tuple)):
        for v in obj:
            _flat_shapes(v, out, depth + 1)
    return out


def _outgoing(g: Graph, call_id: str) -> list[tuple[int, ...]]:
    """Shapes of activation edges leaving ``call_id`` (src inside its subtree, dst outside)."""
    inside = {n.id for n in g.nodes if call_id in g.ancestors(n.parent)}
    return [
        e.meta.shape
        for e in g.edges
        if e.src in inside and e.dst not in inside and g.node_by_id[e.src].kind == "op"
    ]


def _reachable_from_inputs(g: Graph) -> set[str]:
    succ: dict[str, list[str]] = {}
    for e in g.edges:
        succ.setdefault(e.src, []).append(e.dst)
    seen = {n.id for n in g.nodes if n.kind == "input"}
    todo = deque(seen)
    while todo:
        for d in succ.get(todo.popleft(), []):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


@pytest.mark.parametrize("name", list(REAL_MODELS))
def test_real_model(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, args, kwargs = REAL_MODELS[name]()
    names = {id(m): q for q, m in model.named_modules()}
    seen: dict[str, list[list[tuple[int, ...]]]] = {}
    handles = [
        m.register_forward_hook(
            lambda m, a, out: seen.setdefault(names[id(m)], []).append(_flat_shapes(out, []))
        )
        for m in model.modules()
    ]
    before_g, before = global_state(), model_state(model)
    t = trace_model(model, args, kwargs=kwargs)
    assert_same_model_state(before, model_state(model))
    assert global_state() == before_g
    for h in handles:
        h.remove()

    assert t.error is None, t.graph.error
    g = t.graph
    # every module call was recorded, in the same numbers as the hooks saw
    assert {q: len(v) for q, v in seen.items()} == {q: len(cs) for q, cs in g.calls_by_qualname.items()}
    checked = 0
    for c in g.module_calls:
        hook_shapes = seen[c.qualname][c.call_index]
        for shape in _outgoing(g, c.id):
            assert shape in hook_shapes, (c.id, shape, hook_shapes)
            checked += 1
    assert checked >= len(g.module_calls) // 2  # most calls have outgoing edges that were compared

    outputs = [n for n in g.nodes if n.kind == "output"]
    assert outputs
    reach = _reachable_from_inputs(g)
    assert all(o.id in reach for o in outputs), [o.name for o in outputs if o.id not in reach]
    assert sum(1 for n in g.nodes if n.kind == "op" and n.source) == g.op_count  # every op has a location
    # ops inside built-in modules are recorded too (the view can open them later)
    assert any(g.call_by_id[n.parent].builtin for n in g.nodes if n.kind == "op" and n.parent)


def test_gpt2_output_and_names() -> None:
    model, args, kwargs = REAL_MODELS["gpt2"]()
    g = trace_model(model, args, kwargs=kwargs).graph
    assert [n.name for n in g.nodes if n.kind == "input"] == ["input_ids"]
    (out,) = [n for n in g.nodes if n.kind == "output"]
    assert out.name == "last_hidden_state" and out.outputs[0].shape == (1, 8, 64)
    assert [c.id for c in g.calls_by_qualname["h.1"]] == ["mod:h.1"]
    wte = [n for n in g.nodes if n.kind == "parameter" and n.name == "wte.weight"]
    assert len(wte) == 1 and wte[0].parent == "mod:wte"
    emb = [n for n in g.nodes if n.name == "embedding"][0]
    assert emb.source and "modeling_gpt2.py" in emb.source  # innermost frame outside torch: HF's code


def test_t5_encoder_decoder_kwargs() -> None:
    model, args, kwargs = REAL_MODELS["t5"]()
    g = trace_model(model, args, kwargs=kwargs).graph
    assert [n.name for n in g.nodes if n.kind == "input"] == ["input_ids", "decoder_input_ids"]
    outs = {n.name: n.outputs[0].shape for n in g.nodes if n.kind == "output"}
    assert outs == {"last_hidden_state": (1, 4, 64), "encoder_last_hidden_state": (1, 8, 64)}
    # the encoder's output feeds the decoder's cross-attention
    enc = {n.id for n in g.nodes if n.parent and "mod:encoder" in g.ancestors(n.parent)}
    dec = {n.id for n in g.nodes if n.parent and "mod:decoder" in g.ancestors(n.parent)}
    assert any(e.src in enc and e.dst in dec for e in g.edges)
    # the shared embedding belongs to its module, not to the encoder's call of it: each call that reads it
    # has its own parameter node, and no edge carries it from the encoder into the decoder
    shared = [n for n in g.nodes if n.kind == "parameter" and n.name == "shared.weight"]
    assert len(shared) == 2 and len({n.parent for n in shared}) == 2
    for n in shared:
        assert {g.node_by_id[e.dst].parent for e in g.edges if e.src == n.id} == {n.parent}


def test_lstm_nested_outputs() -> None:
    model, args, kwargs = REAL_MODELS["lstm"]()
    g = trace_model(model, args, kwargs=kwargs).graph
    assert {n.name: n.outputs[0].shape for n in g.nodes if n.kind == "output"} == {
        "output[0]": (2, 3),
        "output[1][0]": (2, 2, 24),
        "output[1][1]": (2, 2, 24),
    }
    (lstm_op,) = [n for n in g.nodes if n.name == "lstm"]
    assert lstm_op.parent == "mod:lstm" and len(lstm_op.outputs) == 3
    assert len(lstm_op.params) == 8


def test_full_size_llama_on_meta_device() -> None:
    from transformers import LlamaConfig, LlamaModel

    with torch.device("meta"):
        # eager attention: HF's sdpa mask helpers read tensor values (.all()), which meta tensors don't have
        model = LlamaModel(LlamaConfig(attn_implementation="eager")).eval()
    ids = torch.zeros(1, 6, dtype=torch.long, device="meta")
    mask = torch.ones(1, 6, dtype=torch.long, device="meta")
    t = trace_model(model, (ids,), kwargs={"attention_mask": mask, "use_cache": False})
    assert t.error is None, t.graph.error
    g = t.graph
    (out,) = [n for n in g.nodes if n.kind == "output"]
    assert out.outputs[0].shape == (1, 6, 4096) and out.outputs[0].device == "meta"
    assert len(g.calls_by_qualname["layers.31"]) == 1
    assert g.call_by_id["mod:(root)"].num_params > 6_000_000_000
    q_proj = g.calls_by_qualname["layers.0.self_attn.q_proj"][0]
    assert q_proj.params[0].shape == (4096, 4096)


@pytest.mark.parametrize("name", ["gpt2", "nn_transformer", "lstm"])
def test_source_shortcut_matches_full_walk(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-call site shortcut for ops inside built-in modules gives what walking every frame gives."""

    from torchvista_dash.frontends.trace import recorder

    model, args, kwargs = REAL_MODELS[name]()
    fast = trace_model(model, args, kwargs=kwargs).graph

    def full_walk(self: recorder.Recorder, f: Any) -> Any:
        return self._walk(f)[0]  # every frame from the op's caller outwards

    monkeypatch.setattr(recorder.Recorder, "source", full_walk)
    slow = trace_model(model, args, kwargs=kwargs).graph
    assert [n.source for n in fast.nodes] == [n.source for n in slow.nodes]
    assert all(n.source for n in fast.nodes if n.kind == "op")


def test_a_tokenizers_batch_is_traced_as_the_forwards_keyword_arguments() -> None:
    # users pass what a tokenizer returns (a BatchEncoding: a mapping), as they call model(**batch)
    from transformers import BatchEncoding

    model, args, kwargs = REAL_MODELS["t5"]()
    batch = BatchEncoding({"input_ids": args[0], **kwargs})
    t = trace_model(model, batch)
    assert not t.failed
    assert [n.name for n in t.graph.nodes if n.kind == "input"] == ["input_ids", "decoder_input_ids"]
    assert t.to_json() == trace_model(model, args, kwargs=kwargs).to_json()
