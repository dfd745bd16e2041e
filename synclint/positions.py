"""Source positions for CST nodes, computed only for files that have something to report.

libcst's ``PositionProvider`` costs about as much as a parse, so the lint path never asks for it up
front: the model keeps CST nodes, and a :class:`PositionIndex` is built the first time a rule turns a
node into a :class:`~synclint.diagnostics.Span`. Columns become 1-based here.
"""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from typing import Iterable, Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from synclint.cstwalk import parent_map
from synclint.diagnostics import Applicability, Edit, Fix, Position, Span

_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


@contextmanager
def deep_recursion(limit: int = 20_000) -> Iterator[None]:
    """libcst's visitors recurse once per tree level; a 1,000-term ``a + b + ...`` chain is 1,000
    levels deep. Raise the interpreter's limit while walking such trees."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


class PositionIndex:
    def __init__(self, module: cst.Module, source: str | None = None) -> None:
        self.module = module
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        with deep_recursion():
            # PositionProvider._gen directly: wrapper.resolve() would also run libcst's batched
            # visitor over the whole module with no batchable provider to feed (a full, slow
            # traversal for nothing: 40% of the cost of positions on DeepSpeed's stage3.py).
            self._ranges = PositionProvider()._gen(wrapper)
        self._parents: dict[cst.CSTNode, cst.CSTNode] | None = None
        # Python's own line breaks only (str.splitlines also breaks at form feeds and others).
        self._lines = re.split(r"(?<=\n)", source if source is not None else module.code)

    def span(self, node: cst.CSTNode) -> Span:
        r = self._ranges[node]
        return Span(Position(r.start.line, r.start.column + 1), Position(r.end.line, r.end.column + 1))

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        if self._parents is None:
            # Whitespace and punctuation have no parents here: they are never flagged.
            self._parents = parent_map(self.module)
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterable[cst.CSTNode]:
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def statement(self, node: cst.CSTNode) -> cst.CSTNode:
        """The innermost statement line (simple, or a compound statement's header) holding ``node``."""
        if isinstance(node, _STATEMENTS):
            return node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, _STATEMENTS):
                return ancestor
        return node

    def statement_lines(self, node: cst.CSTNode) -> tuple[int, int]:
        stmt = self.statement(node)
        if isinstance(stmt, cst.BaseCompoundStatement):
            # The header only: from the keyword to the colon (the body is other statements).
            start = self.span(stmt).start.line
            body = getattr(stmt, "body", None)
            end = self.span(body).start.line if body is not None else start
            return start, max(start, end)
        span = self.span(stmt)
        end_line = span.end.line
        if span.end.column == 1 and end_line > span.start.line:
            end_line -= 1  # a SimpleStatementLine's range ends after its newline
        return span.start.line, end_line

    def indentation(self, line: int) -> str:
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        return text[: len(text) - len(text.lstrip(" \t"))]

    def insert_before_statement(
        self, node: cst.CSTNode, text: str, message: str, applicability: Applicability
    ) -> Fix:
        start_line, _ = self.statement_lines(node)
        indent = self.indentation(start_line)
        lines = "".join(f"{indent}{part}\n" for part in text.splitlines())
        at = Position(start_line, 1)
        return Fix(message, applicability, (Edit(Span(at, at), lines),))
