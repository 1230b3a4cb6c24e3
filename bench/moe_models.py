"""Mixture-of-experts models for the scale benchmarks (also serve targets: ``bench.moe_models:<name>``):
Qwen3-MoE configs with random weights on the CPU (48 layers, 128 experts, top-8, hidden 64, expert width
32, 32 tokens), with transformers' default fused experts or with ``experts_implementation="eager"``, whose
loop over the routed experts records every expert's ops."""

from __future__ import annotations

from typing import Any


def qwen3_moe(
    layers: int = 48, experts: int = 128, eager: bool = False, top_k: int = 8, tokens: int = 32
) -> tuple[Any, Any]:
    import torch
    from transformers import Qwen3MoeConfig, Qwen3MoeModel

    cfg = Qwen3MoeConfig(
        hidden_size=64,
        intermediate_size=128,
        moe_intermediate_size=32,
        num_hidden_layers=layers,
        num_experts=experts,
        num_experts_per_tok=top_k,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        vocab_size=1000,
        attn_implementation="eager",
        experts_implementation="eager" if eager else None,
    )
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (1, tokens), generator=torch.Generator().manual_seed(0))
    return Qwen3MoeModel(cfg).eval(), ids


def qwen3_moe_fused() -> tuple[Any, Any]:
    return qwen3_moe()


def qwen3_moe_eager() -> tuple[Any, Any]:
    return qwen3_moe(eager=True)


def moe256_eager() -> tuple[Any, Any]:
    """The stretch: 256 experts per layer (DeepSeek-V3's count), eager, on the same small widths."""
    return qwen3_moe(experts=256, eager=True)
