"""The values every part of synclint exchanges: positions, fixes and diagnostics.

Everything here is immutable and carries 1-based lines and 1-based *character* columns (libcst's
columns are 0-based; convert at the boundary, in :mod:`synclint.positions`). The output formats,
the cache, the fixer and ``synclint confirm`` all read these objects, so they hold no CST nodes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True, order=True)
class Position:
    """A point in a file: 1-based line, 1-based character column."""

    line: int
    column: int


@dataclass(frozen=True, order=True)
class Span:
    """A half-open range ``[start, end)`` of characters in one file."""

    start: Position
    end: Position


@dataclass(frozen=True)
class Related:
    """Another place that explains a finding (the other access, the allocation, the wait)."""

    span: Span
    message: str
    path: str | None = None  # None: the same file as the finding


class Applicability(str, enum.Enum):
    """How a fix may be applied: ``safe`` with ``--fix``, ``unsafe`` only with ``--unsafe-fixes``."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Edit:
    """Replace the text in ``span`` with ``content`` (an empty span inserts)."""

    span: Span
    content: str


@dataclass(frozen=True)
class Fix:
    message: str
    applicability: Applicability
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Diagnostic:
    """One finding.

    ``data`` carries machine-readable details for ``synclint confirm`` and JSON output, e.g.
    ``{"tensor": "x", "first": {"stream": "s", "line": 12, "access": "write"},
    "second": {"stream": "default", "line": 15, "access": "read"}, "hazard": "read-after-write"}``.
    ``noqa_line`` is the line where a suppression comment for this finding is looked for first
    (the statement's first line); the statement's last line is also accepted.
    """

    code: str
    message: str
    path: str
    span: Span
    related: tuple[Related, ...] = ()
    fix: Fix | None = None
    data: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    noqa_line: int | None = None
    noqa_end_line: int | None = None

    def sort_key(self) -> tuple:
        return (self.path, self.span.start.line, self.span.start.column, self.code, self.message)


def unparsable(path: str, line: int, column: int, message: str) -> Diagnostic:
    """SYN001 at one point: a file that cannot be decoded or parsed."""
    at = Position(line, column)
    return Diagnostic("SYN001", message, path, Span(at, at), noqa_line=line, noqa_end_line=line)
