"""Suppression comments, and SYN002 for the ones that suppressed nothing.

Recognised, in real comments only (found with :mod:`tokenize`, so text inside strings never counts):

* ``# synclint: ignore[SYN101, SYN102]`` and bare ``# synclint: ignore`` (every code), on the
  flagged line or on the first or last line of the statement holding it;
* ``# noqa: SYN101`` likewise. A bare ``# noqa`` suppresses every synclint finding on its line, as
  in flake8 and ruff; codes that are not synclint's (``# noqa: E501``) are left to their tools;
* ``# synclint: ignore-file[SYN101]`` (or bare ``# synclint: ignore-file``) anywhere in the file.

SYN002 reports a synclint directive, or one code in it, that suppressed nothing in this run. To stay
precise it never reports a bare ``# noqa`` (it is usually there for another linter), codes of rules
that are not enabled for the file (another configuration may need them), nor anything in a file that
did not parse (the rules did not run). Codes that no rule has are reported as SYN002 when it is
enabled, and always warned about on standard error.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable

from synclint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Span

_CODE = r"[A-Za-z]+[0-9]+"
_CODE_LIST = rf"{_CODE}(?:\s*,\s*{_CODE}|\s+{_CODE})*"
_SYNCLINT = re.compile(
    rf"#\s*synclint\s*:\s*(?P<kind>ignore-file|ignore)\b(?:\[\s*(?P<codes>{_CODE_LIST})?\s*,?\s*\])?",
    re.IGNORECASE,
)
_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODE_LIST})|(?P<colon>:))?", re.IGNORECASE)
_SYN = re.compile(r"^SYN[0-9]+$")
#: A ``noqa:`` list with a SYN code somewhere after it on the line (searched in the lowered text).
_NOQA_WITH_CODES = re.compile(r"noqa:[^\n]*syn[0-9]")
#: A comment that can be a synclint directive holds ``synclint``, a bare ``noqa`` (nothing or not a
#: colon right after it) or a ``noqa:`` list with a SYN code: a superset of what ``_SYNCLINT`` and
#: ``_NOQA`` accept, checked before tokenizing (tokenizing is the costly part). Searched in the
#: lowered text: ``re.IGNORECASE`` on the source was four times slower.
_MAY_MATTER = re.compile(rf"noqa(?!:)|{_NOQA_WITH_CODES.pattern}|synclint")


@dataclass
class Directive:
    """One suppression directive in a comment."""

    kind: str  # "ignore", "noqa" or "ignore-file"
    line: int
    start_column: int  # 1-based, the directive's '#'
    end_column: int  # exclusive
    codes: tuple[str, ...] | None  # synclint codes named; None: all codes
    other_codes: tuple[str, ...] = ()  # codes of other tools in a `# noqa:` list
    comment_start: int = 1  # 1-based column of the comment token
    comment_end: int = 1
    only_on_line: bool = False  # nothing but this comment on its line
    line_text: str = ""
    used: set[str] = field(default_factory=set)

    def matches(self, code: str) -> bool:
        return self.codes is None or code in self.codes


def _comments(source: str) -> Iterable[tuple[int, int, str, str]]:
    """(line, 0-based column, comment, line text) of every comment; stops quietly at bad input."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                line, column = token.start
                yield line, column, token.string, token.line
    except (tokenize.TokenError, SyntaxError, IndentationError, ValueError):
        return


def _split_codes(text: str | None) -> tuple[str, ...]:
    return tuple(c.upper() for c in re.findall(_CODE, text or ""))


def parse_directives(source: str, findings: bool = True) -> list[Directive]:
    """Every synclint-relevant directive in the source's comments.

    ``findings=False`` says the file has no findings: then a bare ``# noqa`` does nothing (it
    only suppresses findings on its line, names no code and is never reported as unused), and a
    file whose only candidates are bare ``# noqa`` comments is not tokenized for them.
    (Tokenizing is the costly part: on vLLM, whose files carry many bare ``# noqa`` for ruff,
    it was about 8% of the serial time.)"""
    lowered = source.lower()
    if "synclint" not in lowered and "noqa" not in lowered:
        return []
    if not _MAY_MATTER.search(lowered):
        return []  # only `# noqa: E501`-style comments for other tools: no need to tokenize
    if not findings and "synclint" not in lowered and not _NOQA_WITH_CODES.search(lowered):
        return []  # bare `# noqa` comments at most, and nothing for them to suppress
    found: list[Directive] = []
    for line, column, comment, text in _comments(source):
        for match in _SYNCLINT.finditer(comment):
            codes = _split_codes(match.group("codes"))
            found.append(
                _directive(
                    match.group("kind").lower(),
                    line,
                    column,
                    comment,
                    match,
                    text,
                    codes if match.group("codes") else None,
                )
            )
        for match in _NOQA.finditer(comment):
            if match.group("colon"):
                continue  # `# noqa:` with nothing valid after it: malformed, ignored like ruff
            if match.group("codes") is None:
                found.append(_directive("noqa", line, column, comment, match, text, None))
                continue
            every = _split_codes(match.group("codes"))
            ours = tuple(c for c in every if _SYN.match(c))
            if ours:
                directive = _directive("noqa", line, column, comment, match, text, ours)
                directive.other_codes = tuple(c for c in every if not _SYN.match(c))
                found.append(directive)
    return found


def _directive(kind, line, column, comment, match, text, codes) -> Directive:
    return Directive(
        kind=kind,
        line=line,
        start_column=column + match.start() + 1,
        end_column=column + match.end() + 1,
        codes=codes,
        comment_start=column + 1,
        comment_end=column + len(comment) + 1,
        only_on_line=text[:column].strip() == "",
        line_text=text.rstrip("\r\n"),
    )


def _lines_of(diagnostic: Diagnostic) -> set[int]:
    lines = {diagnostic.span.start.line}
    lines.update(x for x in (diagnostic.noqa_line, diagnostic.noqa_end_line) if x is not None)
    return lines


def apply_suppressions(
    diagnostics: Iterable[Diagnostic], directives: list[Directive]
) -> list[Diagnostic]:
    """The diagnostics no directive suppresses; marks the directives that were used."""
    by_line: dict[int, list[Directive]] = {}
    file_level: list[Directive] = []
    for directive in directives:
        if directive.kind == "ignore-file":
            file_level.append(directive)
        else:
            by_line.setdefault(directive.line, []).append(directive)
    kept: list[Diagnostic] = []
    for diagnostic in diagnostics:
        suppressed = False
        candidates = [d for line in sorted(_lines_of(diagnostic)) for d in by_line.get(line, ())]
        for directive in file_level + candidates:
            if directive.matches(diagnostic.code):
                directive.used.add(diagnostic.code)
                suppressed = True
        if not suppressed:
            kept.append(diagnostic)
    return kept


def unknown_codes(directives: Iterable[Directive], known: Iterable[str]) -> list[tuple[int, str]]:
    known = set(known)
    return [(d.line, code) for d in directives for code in (d.codes or ()) if code not in known]


def unused_suppressions(
    path: str,
    directives: list[Directive],
    enabled: frozenset[str],
    known: Iterable[str],
) -> list[Diagnostic]:
    """SYN002 diagnostics, with safe fixes that drop the unused comment or code."""
    known = set(known)
    found: list[Diagnostic] = []
    for directive in directives:
        if directive.kind == "noqa" and directive.codes is None:
            continue  # bare `# noqa`: usually there for another linter
        if directive.codes is None:
            if directive.used:
                continue
            message = f"unused suppression `{_text(directive)}`: it suppressed nothing"
            found.append(_unused(path, directive, message, ()))
            continue
        unknown = [c for c in directive.codes if c not in known]
        unused = [
            c for c in directive.codes if c in known and c in enabled and c not in directive.used
        ]
        if not unknown and not unused:
            continue
        parts = []
        if unused:
            parts.append(f"unused {', '.join(unused)} (suppressed nothing)")
        if unknown:
            parts.append(f"unknown rule code{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
        found.append(_unused(path, directive, f"suppression: {'; '.join(parts)}", unused + unknown))
    return found


def _text(directive: Directive) -> str:
    if directive.kind == "noqa":
        return "# noqa" + (f": {', '.join(directive.codes)}" if directive.codes else "")
    codes = f"[{', '.join(directive.codes)}]" if directive.codes else ""
    return f"# synclint: {directive.kind}{codes}"


def _unused(path: str, directive: Directive, message: str, drop: Iterable[str]) -> Diagnostic:
    start = Position(directive.line, directive.start_column)
    end = Position(directive.line, directive.end_column)
    drop = set(drop)
    remaining = tuple(c for c in (directive.codes or ()) if c not in drop)
    if directive.codes is not None and (remaining or directive.other_codes):
        codes = remaining + directive.other_codes
        if directive.kind == "noqa":
            replacement = f"# noqa: {', '.join(codes)}"
        else:
            replacement = f"# synclint: {directive.kind}[{', '.join(codes)}]"
        edit = Edit(Span(start, end), replacement)
        fix_message = f"Remove unused code{'s' if len(drop) > 1 else ''} {', '.join(sorted(drop))}"
    else:
        edit = _removal(directive)
        fix_message = "Remove the suppression comment"
    return Diagnostic(
        code="SYN002",
        message=message,
        path=path,
        span=Span(start, end),
        fix=Fix(fix_message, Applicability.SAFE, (edit,)),
        noqa_line=directive.line,
        noqa_end_line=directive.line,
    )


def _removal(directive: Directive) -> Edit:
    """Remove the directive so that the line still reads well (and still parses).

    A comment that is nothing but the directive goes with the spaces before it, or with its whole
    line when it stands alone; a directive followed by more comment text leaves a ``#`` behind so
    that the rest stays a comment.
    """
    line, start, end = directive.line, directive.start_column, directive.end_column
    before = directive.line_text[: start - 1]
    if end >= directive.comment_end:
        if before.strip() == "":
            return Edit(Span(Position(line, 1), Position(line + 1, 1)), "")
        gap_start = len(before.rstrip()) + 1
        return Edit(Span(Position(line, gap_start), Position(line, end)), "")
    if start == directive.comment_start:
        return Edit(Span(Position(line, start), Position(line, end)), "#")
    return Edit(Span(Position(line, len(before.rstrip()) + 1), Position(line, end)), "")
