"""options: one validated type per concern, one text form, one translation of "-1 means everything"."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from torchvista_dash.model.options import (
    DEFAULT_NODE_BUDGET,
    DrawOptions,
    ViewOptions,
    depth_from_text,
    options_from_text,
    options_to_text,
    split_options,
)


def test_defaults_are_frozen_and_checked() -> None:
    v, d = ViewOptions(), DrawOptions()
    assert (v.depth, v.fold_repeats, v.show_params, v.node_budget) == (1, True, False, DEFAULT_NODE_BUDGET)
    assert (d.theme, d.rankdir, d.highlight, d.labels, d.details) == ("light", "TB", None, None, None)
    with pytest.raises(FrozenInstanceError):
        v.depth = 2  # type: ignore[misc]
    with pytest.raises(ValueError, match="depth must be a non-negative int or None"):
        ViewOptions(depth=-1)
    with pytest.raises(ValueError, match="node_budget must be an int of at least 1"):
        ViewOptions(node_budget=0)
    with pytest.raises(ValueError, match="theme must be one of light, dark, not 'blue'"):
        DrawOptions(theme="blue")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rankdir must be one of TB, LR, BT, RL"):
        DrawOptions(rankdir="up")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fold_repeats must be True or False"):
        ViewOptions(fold_repeats="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "depth"),
    [(-1, None), ("-1", None), ("all", None), ("None", None), (None, None), (0, 0), ("3", 3), (2, 2)],
)
def test_minus_one_means_everything(text: object, depth: int | None) -> None:
    assert depth_from_text(text) == depth


@pytest.mark.parametrize("bad", ["-2", "two", -5, 1.5, True])
def test_bad_depth_text_says_what_to_write(bad: object) -> None:
    with pytest.raises(ValueError, match="depth must be a whole number ≥ 0, or -1/all for every op, not "):
        depth_from_text(bad)  # in the words a user of the CLI or the URL wrote (no "None" there)


def test_split_options_names_the_unknown_one_and_layers_on_a_base() -> None:
    view, draw = split_options({"depth": None, "theme": "dark", "show_params": True})
    assert view == ViewOptions(depth=None, show_params=True) and draw == DrawOptions(theme="dark")
    view2, draw2 = split_options({"rankdir": "LR"}, view=view, draw=draw)
    assert view2 == view and draw2 == DrawOptions(theme="dark", rankdir="LR")
    with pytest.raises(TypeError, match=r"figure\(\) got unknown option\(s\) 'colour'; options are: depth"):
        split_options({"colour": "red"}, where="figure()")


def test_text_form_round_trips_and_ignores_other_keys() -> None:
    view = ViewOptions(depth=None, fold_repeats=False, node_budget=300)
    draw = DrawOptions(theme="dark", rankdir="LR", labels=False)
    text = options_to_text(view, draw)
    assert text == {
        "depth": "-1",
        "fold_repeats": "false",
        "node_budget": "300",
        "theme": "dark",
        "rankdir": "LR",
        "labels": "false",
    }
    assert split_options(options_from_text({**text, "trace": "abc"})) == (view, draw)
    assert options_to_text(ViewOptions(), DrawOptions()) == {}
    with pytest.raises(
        ValueError, match=r"theme must be one of light, dark, not 'neon' \(in the page address\)"
    ):
        options_from_text({"theme": "neon"})
    with pytest.raises(ValueError, match="show_params in the page address: expected true or false"):
        options_from_text({"show_params": "maybe"})
