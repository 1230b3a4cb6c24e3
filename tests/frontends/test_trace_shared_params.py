"""A parameter belongs to its module, not to the first call that used it (issue 10, item 14).

A module called twice and a tied embedding (T5's and BART's shared token embedding, GPT-2's tied LM head)
read one weight from several calls. Each call that reads it gets its own parameter node, so no edge
carries the weight from inside one call into another: not in the graph, not in any view at any depth
(folded or not), not in ``to_networkx``.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from support_models import REAL_MODELS, build_synthetic

from torchvista_dash import Trace, trace_model


def _bart() -> tuple[torch.nn.Module, tuple[Any, ...], dict[str, Any]]:
    from transformers import BartConfig, BartModel

    torch.manual_seed(0)
    cfg = BartConfig(
        vocab_size=64,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=32,
    )
    ids = torch.randint(3, 64, (1, 6), generator=torch.Generator().manual_seed(0))
    return BartModel(cfg).eval(), (ids,), {"decoder_input_ids": ids[:, :4], "use_cache": False}


def _gpt2_lm_head() -> tuple[torch.nn.Module, tuple[Any, ...], dict[str, Any]]:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50, n_positions=16, tie_word_embeddings=True)
    m = GPT2LMHeadModel(cfg).eval()
    assert m.lm_head.weight is m.transformer.wte.weight
    return (
        m,
        (torch.randint(0, 50, (1, 5), generator=torch.Generator().manual_seed(0)),),
        {"use_cache": False},
    )


MODELS = {
    "module called twice": lambda: build_synthetic("reuse"),
    "t5 shared embedding": REAL_MODELS["t5"],
    "bart shared embedding": _bart,
    "gpt2 tied lm head": _gpt2_lm_head,
}


@pytest.fixture(scope="module", params=list(MODELS))
def traced(request: pytest.FixtureRequest) -> tuple[str, Trace]:
    model, args, kwargs = MODELS[request.param]()
    return request.param, trace_model(model, args, kwargs=kwargs)


def _param_tensors(t: Trace) -> dict[str, str]:
    """Tensor name -> parameter node id, for every parameter node."""
    return {f"{n.id}/0": n.id for n in t.graph.nodes if n.kind == "parameter"}


def test_a_shared_weight_has_a_node_in_every_call_that_reads_it(traced: tuple[str, Trace]) -> None:
    name, t = traced
    g = t.graph
    shared = {
        "module called twice": "fc.weight",
        "t5 shared embedding": "shared.weight",
        "bart shared embedding": "shared.weight",
        "gpt2 tied lm head": "transformer.wte.weight",
    }[name]
    nodes = [n for n in g.nodes if n.kind == "parameter" and n.name == shared]
    assert len(nodes) >= 2 and len({n.parent for n in nodes}) == len(nodes)  # one per reading call
    for n in g.nodes:
        if n.kind == "parameter":
            users = {g.node_by_id[e.dst].parent for e in g.edges if e.src == n.id}
            assert users == {n.parent}, (n.name, n.parent, users)


def test_no_view_at_any_depth_joins_calls_by_a_weight(traced: tuple[str, Trace]) -> None:
    _, t = traced
    params = _param_tensors(t)
    max_depth = max(c.depth for c in t.graph.module_calls)
    for depth in [*range(max_depth + 2), None]:
        for fold in (True, False):
            v = t.view(depth=depth, show_params=True, fold_repeats=fold)
            for e in v.edges:
                if e.tensor in params:
                    assert e.src == params[e.tensor], (depth, fold, e)  # drawn from the parameter node itself


def test_no_networkx_edge_joins_calls_by_a_weight(traced: tuple[str, Trace]) -> None:
    _, t = traced
    params = _param_tensors(t)
    max_depth = max(c.depth for c in t.graph.module_calls)
    for depth in [*range(max_depth + 2), None]:
        g = t.to_networkx(depth=depth)
        for u, _, d in g.edges(data=True):
            if d["tensor"] in params:
                assert u == params[d["tensor"]], (depth, u, d)


def test_the_module_called_twice_draws_two_calls_each_with_its_weights() -> None:
    model, args, kwargs = build_synthetic("reuse")
    t = trace_model(model, args, kwargs=kwargs)
    assert [n.parent for n in t.graph.nodes if n.name == "fc.weight"] == ["mod:fc", "mod:fc#1"]
    v = t.view(depth=1, show_params=True, fold_repeats=False)
    between = [e for e in v.edges if e.src == "mod:fc" and e.dst == "mod:fc#1"]
    assert len(between) == 1 and between[0].tensor not in _param_tensors(t)  # only the activation
