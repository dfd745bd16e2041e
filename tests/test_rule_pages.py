"""Every registered rule has a page in rules/, every page has a rule, and each page's examples are
tests: the Example is flagged with the page's code, Use instead is not."""

from __future__ import annotations

import re

import pytest
from frame_helpers import ROOT

from synclint.engine import default_codes
from synclint.pipeline import FileSettings, lint_text
from synclint.rules.registry import all_rules

PAGES = ROOT / "rules"
SECTIONS = [
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "Fix safety",
    "Options",
    "References",
]
RULES = sorted(all_rules())
PAGE_FILES = sorted(PAGES.glob("*.md"))


def sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2])}


def python_block(body: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", body, flags=re.DOTALL)
    assert len(blocks) == 1, "the section must hold exactly one ```python block"
    return blocks[0]


def codes_in(code: str, source: str) -> list[str]:
    selected = FileSettings(default_codes() | {code})
    return [d.code for d in lint_text(source, f"{code}_example.py", selected).diagnostics]


@pytest.mark.parametrize("code", RULES)
def test_page_structure(code):
    page = PAGES / f"{code}.md"
    assert page.is_file(), f"rules/{code}.md is missing"
    text = page.read_text(encoding="utf-8")
    assert text.splitlines()[0] == f"# {code}: {all_rules()[code].name}"
    titles = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert [t.strip() for t in titles] == SECTIONS
    for title, body in sections(text).items():
        assert body.strip(), f"section `{title}` is empty"


@pytest.mark.parametrize("code", RULES)
def test_example_is_flagged(code):
    page = PAGES / f"{code}.md"
    assert page.is_file(), f"rules/{code}.md is missing"
    example = python_block(sections(page.read_text(encoding="utf-8"))["Example"])
    assert code in codes_in(code, example)


@pytest.mark.parametrize("code", RULES)
def test_use_instead_is_not_flagged(code):
    page = PAGES / f"{code}.md"
    assert page.is_file(), f"rules/{code}.md is missing"
    fixed = python_block(sections(page.read_text(encoding="utf-8"))["Use instead"])
    assert code not in codes_in(code, fixed)


@pytest.mark.parametrize("page", PAGE_FILES, ids=[p.name for p in PAGE_FILES])
def test_every_page_has_a_rule(page):
    assert page.stem in all_rules(), f"{page.name} documents no registered rule"
