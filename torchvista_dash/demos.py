"""Small built-in models for the gallery and the CLI, built in code (no downloads, fixed seeds).

Each demo is a function returning ``(model, inputs)``; ``demo_trace(name)`` traces it once per
process. One demo fails on purpose half-way through its forward pass, so the gallery shows what
a failed trace looks like.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn import functional as F

if TYPE_CHECKING:  # pragma: no cover
    from torchvista_dash.traced import Trace


# ---- MLP -----------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self, sizes: tuple[int, ...] = (32, 64, 64, 10)) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for a, b in zip(sizes[:-2], sizes[1:-1], strict=True):
            layers += [nn.Linear(a, b), nn.ReLU(), nn.Dropout(0.1)]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(sizes[-2], sizes[-1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


# ---- ResNet-style CNN ----------------------------------------------------------------------
class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class TinyResNet(nn.Module):
    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layer1 = nn.Sequential(BasicBlock(16, 16), BasicBlock(16, 16))
        self.layer2 = nn.Sequential(BasicBlock(16, 32, stride=2), BasicBlock(32, 32))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


# ---- U-Net ---------------------------------------------------------------------------------
class DoubleConv(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Down(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(2)
        self.conv = DoubleConv(cin, cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(self.pool(x))


class Up(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, 2, stride=2)
        self.conv = DoubleConv(2 * cout, cout)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        return self.conv(torch.cat([skip, self.up(x)], dim=1))


class TinyUNet(nn.Module):
    def __init__(self, cin: int = 1, base: int = 8, classes: int = 2) -> None:
        super().__init__()
        self.inc = DoubleConv(cin, base)
        self.down1 = Down(base, base * 2)
        self.down2 = Down(base * 2, base * 4)
        self.up1 = Up(base * 4, base * 2)
        self.up2 = Up(base * 2, base)
        self.outc = nn.Conv2d(base, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        return self.outc(self.up2(self.up1(x3, x2), x1))


# ---- Transformer encoder/decoder -----------------------------------------------------------
class Seq2SeqTransformer(nn.Module):
    def __init__(self, vocab: int = 50, d_model: int = 32, nhead: int = 2, layers: int = 2) -> None:
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d_model)
        self.tgt_embed = nn.Embedding(vocab, d_model)
        enc_layer = nn.TransformerEncoderLayer(d_model, nhead, 64, dropout=0.0, batch_first=True)
        dec_layer = nn.TransformerDecoderLayer(d_model, nhead, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(enc_layer, layers, enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(dec_layer, layers)
        self.generator = nn.Linear(d_model, vocab)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        memory = self.encoder(self.src_embed(src))
        mask = torch.triu(torch.full((tgt.shape[1], tgt.shape[1]), float("-inf")), diagonal=1)
        out = self.decoder(self.tgt_embed(tgt), memory, tgt_mask=mask)
        return self.generator(out)


# ---- GPT-style decoder ---------------------------------------------------------------------
class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class GPTBlock(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = 64, d: int = 32, heads: int = 2, layers: int = 4, ctx: int = 16) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(GPTBlock(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1])
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ---- a model that fails mid-forward --------------------------------------------------------
class FusionBranch(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.proj = nn.Linear(cin, cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(x))


class Fusion(nn.Module):
    """Concatenates two branches along dim 0 by mistake: their batch sizes match, widths do not."""

    def __init__(self) -> None:
        super().__init__()
        self.left = FusionBranch(16, 24)
        self.right = FusionBranch(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.left(x), self.right(x)], dim=0)  # the bug: should be dim=1


class BrokenFusionNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.fusion = Fusion()
        self.head = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.fusion(self.encoder(x)))


# ---- registry ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Demo:
    name: str
    title: str
    description: str
    build: Callable[[], tuple[nn.Module, tuple[Any, ...]]]
    exported: bool = False  # drawn from its torch.export program (``from_exported``), not a live trace


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _mlp() -> tuple[nn.Module, tuple[Any, ...]]:
    torch.manual_seed(0)
    return MLP().eval(), (torch.randn(4, 32, generator=_gen()),)


def _resnet() -> tuple[nn.Module, tuple[Any, ...]]:
    torch.manual_seed(0)
    return TinyResNet().eval(), (torch.randn(1, 3, 32, 32, generator=_gen()),)


def _unet() -> tuple[nn.Module, tuple[Any, ...]]:
    torch.manual_seed(0)
    return TinyUNet().eval(), (torch.randn(1, 1, 32, 32, generator=_gen()),)


def _transformer() -> tuple[nn.Module, tuple[Any, ...]]:
    torch.manual_seed(0)
    g = _gen()
    return Seq2SeqTransformer().eval(), (
        torch.randint(0, 50, (1, 10), generator=g),
        torch.randint(0, 50, (1, 8), generator=g),
    )


def _gpt() -> tuple[nn.Module, tuple[Any, ...]]:
    torch.manual_seed(0)
    return TinyGPT().eval(), (torch.randint(0, 64, (1, 16), generator=_gen()),)


def _broken() -> tuple[nn.Module, tuple[Any, ...]]:
    torch.manual_seed(0)
    return BrokenFusionNet().eval(), (torch.randn(2, 8, generator=_gen()),)


DEMOS: dict[str, Demo] = {
    d.name: d
    for d in (
        Demo("mlp", "MLP", "Three linear layers with ReLU and dropout.", _mlp),
        Demo("resnet", "ResNet-style CNN", "A stem and two stages of residual BasicBlocks.", _resnet),
        Demo("unet", "U-Net", "Two down and two up stages joined by skip connections (torch.cat).", _unet),
        Demo(
            "transformer",
            "Transformer encoder/decoder",
            "nn.TransformerEncoder and nn.TransformerDecoder with embeddings and a generator.",
            _transformer,
        ),
        Demo(
            "gpt",
            "GPT-style decoder",
            "Token and position embeddings, four pre-norm blocks, an LM head.",
            _gpt,
        ),
        Demo(
            "gpt-export",
            "GPT-style decoder, from torch.export",
            "The GPT demo captured with torch.export.export and read from the ExportedProgram: aten ops, "
            "the same modules.",
            _gpt,
            exported=True,
        ),
        Demo(
            "broken",
            "Failing model",
            "torch.cat on mismatched shapes inside fusion: the trace stops there.",
            _broken,
        ),
    )
}


def build_demo(name: str) -> tuple[nn.Module, tuple[Any, ...]]:
    """A fresh (model, inputs) pair for a demo; a clear error lists the names on a typo."""
    if name not in DEMOS:
        raise KeyError(f"no demo named {name!r}; choose one of: {', '.join(DEMOS)}")
    return DEMOS[name].build()


@functools.cache
def demo_trace(name: str, values: bool = False) -> Trace:
    """The demo's trace, traced once per process (the gallery switches between them instantly);
    ``values``: with its value summaries (``trace_model(..., values=True)``; an exported demo has none)."""
    from torchvista_dash.traced import from_exported, trace_model

    model, inputs = build_demo(name)
    if DEMOS[name].exported:  # exported in code from the demo model: nothing is downloaded or read
        return from_exported(torch.export.export(model, inputs), name=DEMOS[name].title)
    with warnings.catch_warnings():  # the failing demo fails on purpose: no warning for it
        warnings.simplefilter("ignore", UserWarning)
        return trace_model(model, inputs, name=DEMOS[name].title, values=values)
