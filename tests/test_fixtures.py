"""Every file under fixtures/ is linted with the default rules; its findings must be exactly the
``# error: CODE[, CODE]`` comments written on the lines where they are expected.

Layout: ``fixtures/<CODE>/bad_*.py`` (must expect at least one finding of CODE) and
``fixtures/<CODE>/ok_*.py`` (correct code: must expect no finding of CODE).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from synclint.engine import default_codes, lint_source
from synclint.rules.registry import all_rules

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXPECT = re.compile(r"#\s*error:\s*((?:SYN\d{3}\s*,?\s*)+)")


def expectations(text: str) -> set[tuple[int, str]]:
    expected = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code in re.findall(r"SYN\d{3}", match.group(1)):
                expected.add((number, code))
    return expected


# fixtures/confirm/ holds runnable buggy/fixed twin programs for `synclint confirm` (checked by
# tests/confirm), not inline-expectation fixtures.
FILES = sorted(p for p in FIXTURES.rglob("*.py") if p.relative_to(FIXTURES).parts[0] != "confirm")


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_fixture(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = {(d.span.start.line, d.code) for d in lint_source(text, str(path), default_codes())}
    assert found == expectations(text), "\n".join(
        f"{d.span.start.line}: {d.code} {d.message}" for d in lint_source(text, str(path))
    )


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_fixture_naming(path: Path) -> None:
    code = path.parent.name
    assert code in all_rules(), f"fixtures/{code} names no registered rule"
    expected_codes = {c for _, c in expectations(path.read_text(encoding="utf-8"))}
    if path.name.startswith("bad_"):
        assert code in expected_codes, "a bad_ fixture must expect its own rule"
    elif path.name.startswith("ok_"):
        assert code not in expected_codes, "an ok_ fixture must not expect its own rule"
    else:
        pytest.fail("fixture names start with bad_ or ok_")
