"""The options of a picture, in one place: what is drawn (``ViewOptions``) and how (``DrawOptions``).

Every entry point (``Trace.figure/export/show``, ``ModelGraph``, ``notebook.show``, the server's page query,
the first picture, the CLI) builds these two frozen, validated types, so an option is named, checked and
defaulted once. A new option is one field here (with its check and, if its text form is special, its
parser in the field's metadata); the entry points pass it on by name. Pure Python: imported by every stage.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from torchvista_dash.model.metrics import UserValues, get_metric, metric_names

ThemeName = Literal["light", "dark"]
Rankdir = Literal["TB", "LR", "BT", "RL"]

THEMES: tuple[ThemeName, ...] = ("light", "dark")
ReachMode = Literal["step", "up", "down", "all"]
# what a selection lights: one step each way, everything upstream, everything downstream, both
REACH_MODES: tuple[ReachMode, ...] = ("step", "up", "down", "all")
COLOR_BY: tuple[str, ...] = metric_names()  # what boxes can be coloured by (the metric registry's, at import)
RANKDIRS: tuple[Rankdir, ...] = ("TB", "LR", "BT", "RL")
# The most boxes a view draws; over it a view collapses its deepest open calls. A guard only: the layout goes
# module by module (layout.composed.compose), so a view the user asks for is the view drawn (Llama-3-70B every
# op, 5,400 boxes, lays out in under a second: bench/bench_layout_scale.py)
DEFAULT_NODE_BUDGET = 50_000
EVERYTHING = -1  # the depth control's and the CLI's "every op" (depth=None)


def depth_from_text(value: object) -> int | None:
    """A depth as a user writes it (CLI, URL query, the app's dropdown) → ``ViewOptions.depth``.

    ``-1``, ``"all"``, ``"none"`` and ``None`` mean everything open (``None``); anything else must be an int ≥
    0. This is the one place that translates "-1 means everything".
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("all", "none", "every", str(EVERYTHING)):
            return None
        try:
            value = int(text)
        except ValueError:
            raise ValueError(
                f"depth must be a whole number ≥ 0, or -1/all for every op, not {value!r}"
            ) from None
    if isinstance(value, int) and not isinstance(value, bool) and value == EVERYTHING:
        return None
    try:
        return check_depth(value)
    except ValueError:  # said in the words the user wrote in (no "None" on a command line or in a URL)
        raise ValueError(f"depth must be a whole number ≥ 0, or -1/all for every op, not {value!r}") from None


def depth_to_control(depth: int | None) -> int:
    """The depth control's value for a depth (``None`` → ``EVERYTHING``)."""
    return EVERYTHING if depth is None else depth


def check_depth(depth: object) -> int | None:
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 0):
        raise ValueError(f"depth must be a non-negative int or None (everything expanded), got {depth!r}")
    return depth


def _bool_from_text(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, not {value!r}")


def _optional_bool_from_text(value: object) -> bool | None:
    if value is None or str(value).strip().lower() in ("", "auto", "none"):
        return None
    return _bool_from_text(value)


MAX_STYLE_RULES = 50
_HEX = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})")


def style_rules(value: object) -> tuple[tuple[str, str], ...]:
    """Style rules as ``DrawOptions.style`` holds them: ``[("re:.*attn.*", "#e45756"), ("cls:Linear",
    "#4c78a8")]`` (a pattern, ``re:`` a regular expression searched in a box's path or ``cls:`` a module
    class, and a ``#rgb``/``#rrggbb`` colour; first match wins), or their text form ``"re:.*attn.*=#e45756;
    cls:Linear=#4c78a8"``. A ValueError says what is wrong with the first bad rule."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        pairs: list[object] = []
        for part in value.split(";"):
            if part.strip():
                pattern, eq, colour = part.strip().rpartition("=")
                if not eq:
                    raise ValueError(f"style rule {part.strip()!r} needs a colour: PATTERN=#rrggbb")
                pairs.append((pattern.strip(), colour.strip()))
        value = pairs
    if not isinstance(value, (list, tuple)) or len(value) > MAX_STYLE_RULES:
        raise ValueError(f"style must be a list of at most {MAX_STYLE_RULES} (pattern, colour) pairs")
    out: list[tuple[str, str]] = []
    for rule in value:
        if not isinstance(rule, (list, tuple)) or len(rule) != 2 or not all(isinstance(x, str) for x in rule):
            raise ValueError(f"a style rule is a (pattern, colour) pair of texts, not {rule!r}")
        pattern, colour = rule
        if not pattern.startswith(("re:", "cls:")) or len(pattern) > 500:
            raise ValueError(
                f"style pattern {pattern[:80]!r} must start with 're:' (a regular expression over names) or "
                "'cls:' (a module class), e.g. 're:.*attn.*' or 'cls:Linear'"
            )
        if pattern.startswith("re:"):
            try:
                re.compile(pattern[3:])
            except re.error as exc:
                raise ValueError(
                    f"style pattern {pattern[:80]!r} is not a regular expression: {exc}"
                ) from None
        if not _HEX.fullmatch(colour):
            raise ValueError(f"style colour {colour[:40]!r} must be #rgb or #rrggbb, e.g. #e45756")
        out.append((pattern, colour.lower()))
    return tuple(out)


def _choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")


def _flag(name: str, value: object, optional: bool = False) -> None:
    if not isinstance(value, bool) and not (optional and value is None):
        raise TypeError(
            f"{name} must be True or False{' or None (automatic)' if optional else ''}, not {value!r}"
        )


@dataclass(frozen=True)
class ViewOptions:
    """What a view draws: how deep it opens, whether repeats fold, parameters show, how many boxes at most."""

    depth: int | None = field(default=1, metadata={"parse": depth_from_text})
    # "help": the CLI's flag for the field (``--fold-repeats`` / ``--no-fold-repeats``, cli.py)
    fold_repeats: bool = field(
        default=True,
        metadata={
            "help": "fold runs of identical sibling calls into one box ('GPT2Block ×12'); "
            "--no-fold-repeats draws each layer on its own"
        },
    )
    show_params: bool = field(
        default=False, metadata={"help": "draw parameters and scalar constants as boxes of their own"}
    )
    node_budget: int = DEFAULT_NODE_BUDGET
    # one module drawn as its own graph with its own inputs and outputs (model/focus.py): qualname or call id
    root: str | None = None

    def __post_init__(self) -> None:
        check_depth(self.depth)
        if self.root is not None and (not isinstance(self.root, str) or not self.root):
            raise TypeError(
                f"root must be a module's qualname (e.g. 'layers.3.mlp') or None, not {self.root!r}"
            )
        _flag("fold_repeats", self.fold_repeats)
        _flag("show_params", self.show_params)
        if (
            not isinstance(self.node_budget, int)
            or isinstance(self.node_budget, bool)
            or self.node_budget < 1
        ):
            raise ValueError(f"node_budget must be an int of at least 1 (boxes), got {self.node_budget!r}")


@dataclass(frozen=True)
class DrawOptions:
    """How a laid-out view is drawn: theme, direction, the highlighted box, label and detail text."""

    theme: ThemeName = "light"
    rankdir: Rankdir = "TB"
    highlight: str | None = None  # a visible id outlined (a search hit)
    labels: bool | None = None  # text labels (None/True: drawn as the zoom allows; False: none)
    details: bool | None = None  # shape lines and edge labels (None/True: as the zoom allows; False: none)
    # colour boxes by a metric ("flops", "params", "bytes", "time", ...: metrics.py), or by the user's numbers
    # per module or node (a mapping, kept as metrics.UserValues)
    color_by: str | UserValues | None = None
    # a visible id whose inputs and outputs are lit, the rest dimmed (view/reach.py): how far (``reach``), or
    # every path between it and ``path_to``
    selected: str | None = None
    reach: ReachMode = "step"
    path_to: str | None = None
    # boxes coloured by name or class pattern, first match wins: (("re:.*attn.*", "#e45756"), ...)
    style: tuple[tuple[str, str], ...] = field(default=(), metadata={"parse": style_rules})

    def __post_init__(self) -> None:
        _choice("theme", self.theme, THEMES)
        if isinstance(self.color_by, Mapping):
            object.__setattr__(self, "color_by", UserValues.of(self.color_by))
        elif self.color_by is not None and not isinstance(self.color_by, UserValues):
            get_metric(self.color_by)  # a clear error naming the metrics
        _choice("rankdir", self.rankdir, RANKDIRS)
        for name in ("highlight", "selected", "path_to"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a visible id (str) or None, not {value!r}")
        _choice("reach", self.reach, REACH_MODES)
        object.__setattr__(self, "style", style_rules(self.style))  # lists (JSON, a user) made a tuple
        _flag("labels", self.labels, optional=True)
        _flag("details", self.details, optional=True)

    def for_render(self) -> dict[str, Any]:
        """The keyword arguments of ``render.make_figure``: every field but the layout's own (``rankdir``) and
        ``color_by`` (the pipeline turns it into the figure's ``paint``)."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in LAYOUT_FIELDS + PAINT_FIELDS
        }


LAYOUT_FIELDS = ("rankdir",)  # DrawOptions fields that change the layout, not only the drawing
PAINT_FIELDS = (
    "color_by",
    "selected",
    "reach",
    "path_to",
    "style",
)  # DrawOptions fields the pipeline turns into a render.paint.Paint


OPTION_TYPES: tuple[type[ViewOptions] | type[DrawOptions], ...] = (ViewOptions, DrawOptions)


def flag_options() -> list[tuple[str, bool, str]]:
    """(name, default, help) of each on/off option a command line offers as ``--name`` / ``--no-name``."""
    return [
        (f.name, f.default, f.metadata["help"])
        for cls in OPTION_TYPES
        for f in fields(cls)
        if "help" in f.metadata and isinstance(f.default, bool)
    ]


def option_names() -> tuple[str, ...]:
    return tuple(f.name for cls in OPTION_TYPES for f in fields(cls))


def split_options(
    options: Mapping[str, Any],
    *,
    where: str = "this call",
    view: ViewOptions | None = None,
    draw: DrawOptions | None = None,
) -> tuple[ViewOptions, DrawOptions]:
    """Keyword options → (ViewOptions, DrawOptions), on top of ``view``/``draw`` if given; an unknown name is
    a TypeError that lists the known ones."""
    unknown = sorted(set(options) - set(option_names()))
    if unknown:
        raise TypeError(
            f"{where} got unknown option(s) {', '.join(map(repr, unknown))}; "
            f"options are: {', '.join(option_names())}"
        )
    out: list[Any] = []
    for cls, base in ((ViewOptions, view), (DrawOptions, draw)):
        mine = {f.name: options[f.name] for f in fields(cls) if f.name in options}
        start = {f.name: getattr(base, f.name) for f in fields(cls)} if base is not None else {}
        out.append(cls(**{**start, **mine}))
    return out[0], out[1]


_TEXT_PARSERS: dict[str, Callable[[object], Any]] = {
    "bool": _bool_from_text,
    "bool | None": _optional_bool_from_text,
    "int": lambda v: int(str(v)),
    "str | None": lambda v: None if v in (None, "") else str(v),
}


def options_from_text(texts: Mapping[str, str], *, where: str = "the page address") -> dict[str, Any]:
    """Option values from their text forms (a URL query): known names only, each parsed and checked by its
    field (``?depth=all&theme=dark&show_params=1``). Other keys are ignored (they belong to the page)."""
    out: dict[str, Any] = {}
    for cls in OPTION_TYPES:
        for f in fields(cls):
            if f.name not in texts:
                continue
            parse = f.metadata.get("parse") or _TEXT_PARSERS.get(str(f.type), str)
            try:
                out[f.name] = parse(texts[f.name])
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{f.name} in {where}: {exc}") from None
    try:
        split_options(out, where=where)  # every value checked by its type
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{exc} (in {where})") from None
    return out


def options_to_text(view: ViewOptions, draw: DrawOptions) -> dict[str, str]:
    """The options that differ from the defaults, as text ``options_from_text`` reads back."""
    out: dict[str, str] = {}
    for obj, default in ((view, ViewOptions()), (draw, DrawOptions())):
        for f in fields(obj):
            value = getattr(obj, f.name)
            if value == getattr(default, f.name):
                continue
            if f.name == "depth":
                out[f.name] = str(depth_to_control(value))
            elif f.name == "style":
                out[f.name] = style_text(value)
            elif isinstance(value, bool):
                out[f.name] = "true" if value else "false"
            else:
                out[f.name] = "" if value is None else str(value)
    return out


def style_text(rules: tuple[tuple[str, str], ...]) -> str:
    """The text form of style rules (``style_rules`` reads it back)."""
    return "; ".join(f"{pattern}={colour}" for pattern, colour in rules)


DEFAULT_VIEW = ViewOptions()
DEFAULT_DRAW = DrawOptions()
