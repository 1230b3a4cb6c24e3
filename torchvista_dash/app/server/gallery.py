"""What a gallery page chooses among: the built-in demos (``/?demo=gpt``) or a folder of saved traces
(``/?file=encoder.json``), since teams keep folders of traces and want to flip through them like the demos.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from torchvista_dash.model.errors import TorchvistaDashError
from torchvista_dash.traced import Trace, load_trace

MAX_FILES = 500  # a folder gallery lists at most this many traces (a dropdown beyond that is no use)


class Gallery:
    """Entries a page picks with ``?<key>=<name>``; ``labels`` keeps the dropdown order, the first is the
    default."""

    def __init__(self, key: str, title: str, labels: dict[str, str], load: Callable[[str], Trace]) -> None:
        self.key, self.title, self._labels, self.load = key, title, labels, load

    @property
    def labels(self) -> dict[str, str]:
        return self._labels

    @property
    def default(self) -> str:
        return next(iter(self.labels))

    def trace(self, name: str) -> Trace | str:
        """The named entry's trace, or the message a page shows for an unknown name."""
        labels = self.labels
        if name not in labels:
            what = "demo" if self.key == "demo" else "trace file"
            return f"no {what} named {name!r}; choose one of: {', '.join(labels)}"
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


RESCAN_S = 1.0  # a folder gallery looks for new, changed or removed files at most this often


class FolderGallery(Gallery):
    """Every ``*.json`` trace in a folder (sorted by name), watched: a trace written there later appears in
    the next page's dropdown without a restart; a file that is not a trace is skipped (``skipped`` says why)
    and tried again once it changes (a file still being written)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._seen: dict[str, tuple[int, int]] = {}  # name → (mtime_ns, size) when last read
        self._traces: dict[str, Trace] = {}
        self.skipped: dict[str, str] = {}
        self._scanned = -RESCAN_S
        self._lock = threading.Lock()
        super().__init__("file", f"traces in {folder.name or folder}", {}, self._load)
        self.rescan()

    def _load(self, name: str) -> Trace:
        return self._traces[name]

    @property
    def labels(self) -> dict[str, str]:
        if time.monotonic() - self._scanned >= RESCAN_S:
            self.rescan()
        return self._labels

    def rescan(self) -> None:
        with self._lock:
            self._scanned = time.monotonic()
            present: dict[str, tuple[int, int]] = {}
            for path in sorted(self.folder.glob("*.json"))[:MAX_FILES]:
                try:
                    st = path.stat()
                except OSError:
                    continue
                present[path.name] = (st.st_mtime_ns, st.st_size)
                if self._seen.get(path.name) == present[path.name]:
                    continue
                self._seen[path.name] = present[path.name]
                try:
                    with warnings.catch_warnings():  # a failed model's trace is still a trace: the page says
                        warnings.simplefilter("ignore", UserWarning)
                        self._traces[path.name] = load_trace(path)
                    self.skipped.pop(path.name, None)
                except (ValueError, OSError) as exc:
                    self._traces.pop(path.name, None)
                    self.skipped[path.name] = str(exc)
            for gone in set(self._seen) - set(present):
                self._seen.pop(gone)
                self._traces.pop(gone, None)
                self.skipped.pop(gone, None)
            self._labels = {name: f"{name} — {_summary(t)}" for name, t in sorted(self._traces.items())}


def folder_gallery(folder: str | Path) -> tuple[Gallery, list[str]]:
    """The watched gallery of ``folder``'s traces (loaded and checked now, so a bad file is reported at start,
    not when a user picks it), and one line per file skipped and why."""
    gallery = FolderGallery(Path(folder))
    skipped = [f"{name}: {why}" for name, why in gallery.skipped.items()]
    if not gallery.labels:
        why = f" ({len(skipped)} .json files, none a trace)" if skipped else ""
        raise FolderError(f"no trace files in {folder}{why}: save traces there with trace.save('name.json')")
    return gallery, skipped


def _summary(trace: Trace) -> str:
    g = trace.graph
    failed = " · failed" if g.error is not None else ""
    return f"{g.model_name or 'model'} · {g.op_count:,} ops{failed}"
