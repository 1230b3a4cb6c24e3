"""The README stays a user's README (short, no benchmark diary) and every file path the docs name exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# Documents that describe the current tree (docs/speed-history.md is history: it names files as they were).
CURRENT_DOCS = [README, ROOT / "docs" / "architecture.md", ROOT / "docs" / "performance.md"]

# A markdown link or image target, or a backticked path with a file extension or a trailing slash.
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
BACKTICKED = re.compile(r"`((?:[\w.-]+/)+[\w.-]*\.(?:py|md|png|css|js|txt|toml)|(?:[\w.-]+/)+)`")


def _named_paths(text: str) -> set[str]:
    found = set(LINK.findall(text)) | set(BACKTICKED.findall(text))
    return {p for p in found if "://" not in p and not p.startswith(("<", "~", "/"))}


def _exists(path: str, doc: Path) -> bool:
    """A path resolves from the document's folder, the repository root or the package (docs shorten
    ``torchvista_dash/layout/...`` to ``layout/...``, and
    ``app/``'s folders to their names)."""
    bases = (doc.parent, ROOT, ROOT / "torchvista_dash", ROOT / "torchvista_dash" / "app")
    return any((base / path).exists() for base in bases)


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 400, f"README.md has {lines} lines: move detail to docs/ (at most 400)"


def test_the_readme_logs_no_runs() -> None:
    text = README.read_text(encoding="utf-8")
    words = re.findall(r"\b(?:rounds?|sessions?)\b", text, flags=re.IGNORECASE)
    assert words == [], f"README.md says {words}: it is for users; history goes to docs/speed-history.md"


@pytest.mark.parametrize("doc", CURRENT_DOCS, ids=lambda p: p.name)
def test_every_path_a_doc_names_exists(doc: Path) -> None:
    missing = sorted(p for p in _named_paths(doc.read_text(encoding="utf-8")) if not _exists(p, doc))
    assert missing == [], f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_readme_shows_its_pictures() -> None:
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README.read_text(encoding="utf-8"))
    assert images and all(p.startswith("docs/img/") and (ROOT / p).is_file() for p in images)
