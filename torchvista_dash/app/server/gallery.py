"""What a gallery page chooses among: the built-in demos (``/?demo=gpt``) or a folder of saved traces
(``/?file=encoder.json``), since teams keep folders of traces and want to flip through them like the demos.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from torchvista_dash.model.errors import TorchvistaDashError
from torchvista_dash.traced import Trace, load_trace

MAX_FILES = 500  # a folder gallery lists at most this many traces (a dropdown beyond that is no use)


@dataclass(frozen=True)
class Gallery:
    """Entries a page picks with ``?<key>=<name>``; ``labels`` keeps the dropdown order, the first is the
    default."""

    key: str
    title: str
    labels: dict[str, str]
    load: Callable[[str], Trace]

    @property
    def default(self) -> str:
        return next(iter(self.labels))

    def trace(self, name: str) -> Trace | str:
        """The named entry's trace, or the message a page shows for an unknown name."""
        if name not in self.labels:
            what = "demo" if self.key == "demo" else "trace file"
            return f"no {what} named {name!r}; choose one of: {', '.join(self.labels)}"
        return self.load(name)


def demo_gallery() -> Gallery:
    from torchvista_dash.demos import DEMOS, demo_trace

    return Gallery(
        "demo",
        "torchvista_dash gallery",
        {d.name: f"{d.title} — {d.description}" for d in DEMOS.values()},
        demo_trace,
    )


class FolderError(TorchvistaDashError, ValueError):
    """A folder that cannot be a gallery (no readable trace in it)."""


def folder_gallery(folder: str | Path) -> tuple[Gallery, list[str]]:
    """Every ``*.json`` trace in ``folder`` (sorted by name, loaded and checked now, so a bad file is reported
    at start, not when a user picks it), and one line per file skipped and why."""
    folder = Path(folder)
    traces: dict[str, Trace] = {}
    skipped: list[str] = []
    for path in sorted(folder.glob("*.json"))[:MAX_FILES]:
        try:
            with (
                warnings.catch_warnings()
            ):  # a failed model's trace is still a trace: the page shows its error
                warnings.simplefilter("ignore", UserWarning)
                traces[path.name] = load_trace(path)
        except (ValueError, OSError) as exc:
            skipped.append(f"{path.name}: {exc}")
    if not traces:
        why = f" ({len(skipped)} .json files, none a trace)" if skipped else ""
        raise FolderError(f"no trace files in {folder}{why}: save traces there with trace.save('name.json')")
    labels = {name: f"{name} — {_summary(t)}" for name, t in traces.items()}
    return Gallery("file", f"traces in {folder.name or folder}", labels, traces.__getitem__), skipped


def _summary(trace: Trace) -> str:
    g = trace.graph
    failed = " · failed" if g.error is not None else ""
    return f"{g.model_name or 'model'} · {g.op_count:,} ops{failed}"
