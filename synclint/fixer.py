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


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """Lines as Python's tokenizer (and libcst) count them: only CR, LF and CRLF end a line.

    ``str.splitlines`` also splits at form feeds and other separators, which would shift every
    line number after one (form feeds are common page breaks in older code)."""
    if not text:
        return []
    parts = re.split(r"(\r\n|\r|\n)", text)
    lines = [a + b if keepends else a for a, b in zip(parts[0::2], parts[1::2] + [""])]
    return lines if lines[-1] else lines[:-1]


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


def _already_there(text: str, edit: tuple[int, int, str]) -> bool:
    """Whether an edit would change nothing: the same text already replaced, or an insertion whose
    text already stands right there (a fix applied by an earlier run that did not silence its
    finding: inserting it again would only pile up copies)."""
    start, end, content = edit
    if start != end:
        return text[start:end] == content
    if not content:
        return False
    if text.startswith(content, start):
        return True
    # The same whole line(s) just before the insertion point (not merely a matching tail of a
    # differently indented line).
    before = text[:start]
    return before.endswith(content) and (len(before) == len(content) or before[-len(content) - 1] == "\n")


def _accepted(text: str, fixes: Iterable[Fix]) -> list[tuple[Fix, list[tuple[int, int, str]]]]:
    """The fixes that overlap no earlier one (by position), each once, with their offsets."""
    index = LineIndex(text)
    taken: list[tuple[Fix, list[tuple[int, int, str]]]] = []
    seen: set[tuple] = set()
    for fix in sorted(
        fixes, key=lambda f: min((e.span.start for e in f.edits), default=Position(0, 0))
    ):
        ranges = _ranges(fix, index)
        key = tuple(ranges)
        if not ranges or key in seen or all(_already_there(text, r) for r in ranges):
            continue  # an identical fix offered by two findings is applied once
        if any(_overlaps(ranges, other) for _, other in taken):
            continue
        seen.add(key)
        taken.append((fix, ranges))
    return taken


def _apply(text: str, taken: list[tuple[Fix, list[tuple[int, int, str]]]]) -> str:
    edits = sorted((r for _, ranges in taken for r in ranges), key=lambda r: (r[0], r[1]))
    for start, end, content in reversed(edits):
        text = text[:start] + content + text[end:]
    return text


def apply_fixes(text: str, fixes: Iterable[Fix]) -> tuple[str, int]:
    """Apply the fixes that do not overlap an earlier one; returns the text and how many."""
    taken = _accepted(text, fixes)
    return _apply(text, taken), len(taken)


def parses(text: str) -> bool:
    import libcst as cst

    try:
        cst.parse_module(text)
        return True
    except (cst.ParserSyntaxError, RecursionError, MemoryError):
        return False


def _apply_parsing(text: str, fixes: Sequence[Fix]) -> tuple[str, list[Fix]]:
    """Apply what can be applied without breaking the parse; returns the text and those fixes.

    If the round as a whole does not parse, the fixes that break it on their own are dropped; if
    each parses alone but not together, only the first is kept (the next round offers the rest)."""
    taken = _accepted(text, fixes)
    if not taken:
        return text, []
    new_text = _apply(text, taken)
    if parses(new_text):
        return new_text, [fix for fix, _ in taken]
    good = [fix for fix, ranges in taken if parses(_apply(text, [(fix, ranges)]))]
    if len(good) == len(taken):
        good = good[:1]
    return _apply_parsing(text, good) if good else (text, [])


@dataclass
class FixOutcome:
    text: str
    applied: int
    diagnostics: list[Diagnostic]


def _fix_key(d: Diagnostic, lines: list[str]) -> tuple:
    """What makes a fix "the same fix again": rule, inserted texts, and the line it anchors to.

    A fix that comes back after it was applied did not resolve its finding (a rule bug); applying
    it again would only pile up copies, so each is applied once per run."""
    first = min((e.span.start for e in d.fix.edits), default=Position(1, 1))
    anchor = lines[first.line - 1].strip() if 0 < first.line <= len(lines) else ""
    return (d.code, tuple(e.content for e in d.fix.edits), anchor)


def fix_text(text: str, lint: Callable[[str], list[Diagnostic]], unsafe: bool) -> FixOutcome:
    """Fix until nothing changes (at most MAX_ROUNDS rounds); returns the remaining findings."""
    applied = 0
    done: set[tuple] = set()
    diagnostics = lint(text)
    for _ in range(MAX_ROUNDS):
        lines = _NEWLINE.split(text)
        keyed = {}
        for d in diagnostics:
            if wanted(d.fix, unsafe):
                key = _fix_key(d, lines)
                if key not in done:
                    keyed.setdefault(id(d.fix), (d.fix, key))
        if not keyed:
            break
        new_text, used = _apply_parsing(text, [fix for fix, _ in keyed.values()])
        if not used or new_text == text:
            break
        used_ids = {id(fix) for fix in used}
        done.update(key for fix_id, (_, key) in keyed.items() if fix_id in used_ids)
        text, applied = new_text, applied + len(used)
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
