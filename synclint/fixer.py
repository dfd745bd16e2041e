"""Applying fixes: non-overlapping edits, re-lint, repeat; never leave code that does not parse.

A round applies every wanted fix whose edits overlap no fix already taken (first by position wins),
then lints the new text again, because one fix can make or unmake others; at most
:data:`MAX_ROUNDS` rounds. A round whose result does not parse is retried fix by fix, and fixes that
break the parse are dropped. Files are written atomically (temporary file in the same directory,
then :func:`os.replace`, keeping the file's mode), so an interrupted run never leaves half a file.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from synclint.diagnostics import Applicability, Diagnostic, Fix, Position

MAX_ROUNDS = 10
_NEWLINE = re.compile(r"\r\n|\r|\n")


class LineIndex:
    """Maps 1-based (line, character column) positions to offsets in a text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def offset(self, position: Position) -> int:
        if position.line > len(self.starts):
            return len(self.text)
        start = self.starts[max(position.line, 1) - 1]
        end = self.starts[position.line] if position.line < len(self.starts) else len(self.text)
        return min(start + max(position.column, 1) - 1, end)


def wanted(fix: Fix | None, unsafe: bool) -> bool:
    return fix is not None and (fix.applicability is Applicability.SAFE or unsafe)


def _ranges(fix: Fix, index: LineIndex) -> list[tuple[int, int, str]]:
    return sorted(
        (index.offset(e.span.start), index.offset(e.span.end), e.content) for e in fix.edits
    )


def _overlaps(a: list[tuple[int, int, str]], b: list[tuple[int, int, str]]) -> bool:
    for s1, e1, _ in a:
        for s2, e2, _ in b:
            if s1 < e2 and s2 < e1:
                return True
            if s1 == s2 or (s1 == e1 and s2 < s1 < e2) or (s2 == e2 and s1 < s2 < e1):
                return True  # two edits at one point: their order would be a guess
    return False


def apply_fixes(text: str, fixes: Iterable[Fix]) -> tuple[str, int]:
    """Apply the fixes that do not overlap an earlier one; returns the text and how many."""
    index = LineIndex(text)
    taken: list[list[tuple[int, int, str]]] = []
    seen: set[tuple] = set()
    for fix in sorted(
        fixes, key=lambda f: min((e.span.start for e in f.edits), default=Position(0, 0))
    ):
        ranges = _ranges(fix, index)
        key = tuple(ranges)
        if not ranges or key in seen:
            continue  # an identical fix offered by two findings is applied once
        if any(_overlaps(ranges, other) for other in taken):
            continue
        seen.add(key)
        taken.append(ranges)
    edits = sorted(
        (r for ranges in taken for r in ranges), key=lambda r: (r[0], r[1]), reverse=True
    )
    for start, end, content in edits:
        text = text[:start] + content + text[end:]
    return text, len(taken)


def parses(text: str) -> bool:
    import libcst as cst

    try:
        cst.parse_module(text)
        return True
    except (cst.ParserSyntaxError, RecursionError, MemoryError):
        return False


def _apply_parsing(text: str, fixes: Sequence[Fix]) -> tuple[str, int]:
    new_text, count = apply_fixes(text, fixes)
    if count == 0 or parses(new_text):
        return new_text, count
    good = [fix for fix in fixes if parses(apply_fixes(text, [fix])[0])]
    if not good:
        return text, 0
    new_text, count = apply_fixes(text, good)
    if parses(new_text):
        return new_text, count
    return _apply_parsing(text, good[:1]) if len(good) > 1 else (text, 0)


@dataclass
class FixOutcome:
    text: str
    applied: int
    diagnostics: list[Diagnostic]


def fix_text(text: str, lint: Callable[[str], list[Diagnostic]], unsafe: bool) -> FixOutcome:
    """Fix until nothing changes (at most MAX_ROUNDS rounds); returns the remaining findings."""
    applied = 0
    diagnostics = lint(text)
    for _ in range(MAX_ROUNDS):
        fixes = [d.fix for d in diagnostics if wanted(d.fix, unsafe)]
        if not fixes:
            break
        new_text, count = _apply_parsing(text, fixes)
        if count == 0 or new_text == text:
            break
        text, applied = new_text, applied + count
        diagnostics = lint(text)
    return FixOutcome(text, applied, diagnostics)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path``'s contents with ``data`` atomically, keeping its permission bits."""
    path = Path(os.path.realpath(path))
    mode = stat.S_IMODE(path.stat().st_mode)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".synclint-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
