"""Costs and stats() rows: what a module's row counts (every parameter it holds, shared ones too)."""

from __future__ import annotations

from support_models import build_t5

from torchvista_dash import trace_model


def test_a_module_row_counts_every_parameter_it_holds_shared_ones_too() -> None:
    model, args, kw = build_t5()
    rows = {r["qualname"]: r for r in trace_model(model, args, kw).stats()}
    for q in ("encoder", "decoder", "encoder.embed_tokens", "decoder.embed_tokens"):
        module = model.get_submodule(q)
        assert rows[q]["params"] == sum(p.numel() for p in module.parameters()), q
    # the root counts each parameter once, as model.parameters() does (the tied embedding once)
    assert rows[""]["params"] == sum(p.numel() for p in model.parameters())
    assert rows["encoder.embed_tokens"]["param_bytes"] == 4 * rows["encoder.embed_tokens"]["params"]
