"""Source positions for CST nodes, computed only for files that have something to report.

libcst's ``PositionProvider`` costs about as much as a parse, so the lint path never asks for it up
front: the model keeps CST nodes, and a :class:`PositionIndex` is built the first time a rule turns a
node into a :class:`~synclint.diagnostics.Span`. Columns become 1-based here.
"""

from __future__ import annotations

import bisect
import re
import sys
from contextlib import contextmanager
from typing import Iterable, Iterator, Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState

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
    """Positions of the nodes of one parsed module.

    A rule asks for a handful of spans per file, but libcst's ``PositionProvider`` regenerates the
    whole module to give every node its range: on DeepSpeed, whose findings sit in 5,000-line files,
    that was 0.5 of the 7 CPU-seconds of a cold run. So
    ranges are computed per *unit*: the top-level statement holding the node or, inside a class,
    the statement of the class body (a method). Its code is regenerated alone, with the
    indentation of the class body, which yields the same tokens and columns as in the whole file;
    its first line is where that code occurs in the parsed text, and it must occur there exactly
    once (else the whole module is regenerated, as before)."""

    def __init__(
        self, module: cst.Module, source: str | None = None, parsed: str | None = None
    ) -> None:
        self.module = module
        self._text = parsed if parsed is not None else source  # exactly what libcst parsed
        self._ranges: dict[cst.CSTNode, tuple[CodeRange, int]] = {}  # range, lines to add
        self._done: set[int] = set()  # ids of units whose ranges are in ``_ranges``
        self._whole = False
        self._line_starts: list[int] | None = None
        self._parents: Mapping[cst.CSTNode, cst.CSTNode] | None = None
        # Python's own line breaks only (str.splitlines also breaks at form feeds and others).
        self._lines = re.split(r"(?<=\n)", source if source is not None else module.code)

    def span(self, node: cst.CSTNode) -> Span:
        found = self._ranges.get(node)
        if found is None:
            self._compute(node)
            found = self._ranges[node]
        r, shift = found
        return Span(
            Position(r.start.line + shift, r.start.column + 1),
            Position(r.end.line + shift, r.end.column + 1),
        )

    def _compute(self, node: cst.CSTNode) -> None:
        unit, indents = self._unit(node)
        if unit is None or id(unit) in self._done or self._whole:
            self._whole_module()
            return
        self._done.add(id(unit))
        if not self._unit_ranges(unit, indents) or node not in self._ranges:
            self._whole_module()

    def _unit(self, node: cst.CSTNode) -> tuple[cst.CSTNode | None, list[str]]:
        """The statement whose code is regenerated for ``node``, and the indentation inside
        which it sits (a class body's, or none at the top level)."""
        chain = [node, *self.ancestors(node)]
        if chain[-1] is not self.module or len(chain) < 2:
            return None, []  # the module itself, or a node from elsewhere
        top = chain[-2]
        if isinstance(top, cst.ClassDef) and isinstance(top.body, cst.IndentedBlock):
            # [..., member, class body, class, module]
            if len(chain) >= 4 and chain[-3] is top.body:
                indent = top.body.indent
                return chain[-4], [self.module.default_indent if indent is None else indent]
        return top, []

    def _unit_ranges(self, unit: cst.CSTNode, indents: list[str]) -> bool:
        provider = PositionProvider()
        state = PositionProvidingCodegenState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            provider=provider,
        )
        state.indent_tokens = list(indents)
        with deep_recursion():
            unit._codegen(state)
        code = "".join(state.tokens)
        text = self._text
        if text is None or not code:
            return False
        at = text.find(code)
        if at < 0 or (at > 0 and text[at - 1] not in "\r\n") or text.find(code, at + 1) >= 0:
            return False  # not found at a line start, or not only once: regenerate everything
        shift = self._line_of(at) - 1
        for each, r in provider._computed.items():
            self._ranges[each] = (r, shift)
        return True

    def _line_of(self, offset: int) -> int:
        """The 1-based line at ``offset`` of the parsed text, counting line breaks as libcst does."""
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in NEWLINE_RE.finditer(self._text or "")]
        return bisect.bisect_right(self._line_starts, offset)

    def _whole_module(self) -> None:
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        with deep_recursion():
            # PositionProvider._gen directly: wrapper.resolve() would also run libcst's batched
            # visitor over the whole module with no batchable provider to feed.
            ranges = PositionProvider()._gen(wrapper)
        self._ranges = {each: (r, 0) for each, r in ranges.items()}
        self._whole = True

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
