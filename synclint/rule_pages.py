"""The rule pages (``rules/<CODE>.md``), readable from a checkout and from an installed wheel.

A wheel carries the pages as ``synclint/rulebook/*.md``: the build step in ``setup.py`` copies them
there, so the pages have one source (``rules/``) and are never committed twice. In a checkout or an
editable install the pages are read from ``rules/`` beside the package.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def page_directories() -> list[Path]:
    return [_PACKAGE / "rulebook", _PACKAGE.parent / "rules"]


def rule_page(code: str) -> str | None:
    """The Markdown page of ``code``, or None if this installation has none."""
    name = f"{code.upper()}.md"
    for directory in page_directories():
        candidate = directory / name
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    return None
