"""Source positions for CST nodes, computed only for files that have something to report.

libcst's ``PositionProvider`` costs about as much as a parse, so the lint path never asks for it up
front: the model keeps CST nodes, and a :class:`PositionIndex` is built the first time a rule turns a
node into a :class:`~synclint.diagnostics.Span`. Columns become 1-based here.
"""

from __future__ import annotations

import ast
import bisect
import re
import sys
from contextlib import contextmanager
from typing import Iterable, Iterator, Mapping

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState

from synclint.cstwalk import deeper_than, non_trivia_children, parent_map
from synclint.diagnostics import Applicability, Edit, Fix, Position, Span

_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)

#: The deepest tree regenerated in one piece. libcst's code generator recurses once or twice per
#: level through C calls; Python 3.12 and later bound that C recursion whatever the recursion
#: limit (a 700-deep ``elif`` chain ends in a RecursionError there, and on 3.12.1 in a crash).
#: Deeper statements get their positions one simple statement at a time (:meth:`_by_statement`).
SAFE_DEPTH = 300


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
        self._starts: dict[int, CodeRange] | None = None
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
            self._whole_module(node)
            return
        self._done.add(id(unit))
        if _deeper_than(unit, SAFE_DEPTH):
            self._by_statement(node)
            return
        if not self._unit_ranges(unit, indents) or node not in self._ranges:
            self._whole_module(node)

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

    def _whole_module(self, node: cst.CSTNode) -> None:
        if self._whole or _deeper_than(self.module, SAFE_DEPTH):
            if node not in self._ranges:
                self._by_statement(node)
            return
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        with deep_recursion():
            # PositionProvider._gen directly: wrapper.resolve() would also run libcst's batched
            # visitor over the whole module with no batchable provider to feed.
            ranges = PositionProvider()._gen(wrapper)
        self._ranges = {each: (r, 0) for each, r in ranges.items()}
        self._whole = True

    def _by_statement(self, node: cst.CSTNode) -> None:
        """Positions in a tree too deep to regenerate in one piece (:data:`SAFE_DEPTH`).

        CPython's tree, built without recursion limits of this kind, says where each statement
        starts: its statements come in the same order as libcst's. The simple statement line
        holding ``node`` is regenerated alone, with the indentation of the blocks around it, which
        gives exact positions inside it. A node outside simple statements (a compound
        statement's header), or in a line that is itself too deep, gets the span of its
        innermost statement."""
        starts = self._statement_starts()
        line_node = next(
            (n for n in [node, *self.ancestors(node)] if isinstance(n, cst.SimpleStatementLine)),
            None,
        )
        if line_node is not None and line_node.body and not _deeper_than(line_node, SAFE_DEPTH):
            start = starts.get(id(line_node.body[0]))
            if start is not None:
                provider = PositionProvider()
                state = PositionProvidingCodegenState(
                    default_indent=self.module.default_indent,
                    default_newline=self.module.default_newline,
                    provider=provider,
                )
                state.indent_tokens = self._indents_around(line_node)
                line_node._codegen(state)
                shift = start.start.line - 1 - len(line_node.leading_lines)
                for each, r in provider._computed.items():
                    self._ranges.setdefault(each, (r, shift))
                if node in self._ranges:
                    return
        statement = next(
            (n for n in [node, *self.ancestors(node)] if id(n) in starts),
            None,
        )
        if statement is None:
            at = CodePosition(1, 0)
            self._ranges[node] = (CodeRange(at, at), 0)
        else:
            self._ranges[node] = (starts[id(statement)], 0)

    def _indents_around(self, node: cst.CSTNode) -> list[str]:
        """The indentation tokens of the blocks that hold ``node``, outermost first."""
        blocks = [a for a in self.ancestors(node) if isinstance(a, cst.IndentedBlock)]
        default = self.module.default_indent
        return [default if b.indent is None else b.indent for b in reversed(blocks)]

    def _statement_starts(self) -> dict[int, CodeRange]:
        """Each statement's range (a compound statement's: its first line) by the id of the
        libcst node, from CPython's tree of the parsed text; empty where the two disagree."""
        if self._starts is None:
            self._starts = {}
            try:
                tree = ast.parse(self._text if self._text is not None else "")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return self._starts
            ours, theirs = _cst_statements(self.module), _ast_statements(tree)
            if len(ours) == len(theirs):
                lines = self._lines
                for mine, other in zip(ours, theirs):
                    compound = isinstance(mine, cst.BaseCompoundStatement)
                    # A decorated definition starts at `def`/`class` for both (libcst leaves the
                    # decorators before its range).
                    start = CodePosition(
                        other.lineno, _column(lines, other.lineno, other.col_offset)
                    )
                    end_line = other.lineno if compound else (other.end_lineno or other.lineno)
                    end_column = (
                        len(lines[end_line - 1].rstrip("\r\n"))
                        if compound and end_line <= len(lines)
                        else _column(lines, end_line, other.end_col_offset or 0)
                    )
                    self._starts[id(mine)] = CodeRange(start, CodePosition(end_line, end_column))
        return self._starts

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


def _deeper_than(root: cst.CSTNode, limit: int) -> bool:
    """Is ``root``'s tree more than ``limit`` levels deep? (Without recursion, of course: from the
    registered file's index when ``root`` is in it, else by walking.)"""
    indexed = deeper_than(root, limit)
    if indexed is not None:
        return indexed
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in non_trivia_children(node))
    return False


def _column(lines: list[str], line: int, byte_offset: int) -> int:
    """The 0-based character column of CPython's UTF-8 ``byte_offset`` on ``line`` (1-based)."""
    if not 0 < line <= len(lines):
        return 0
    return len(lines[line - 1].encode("utf-8")[:byte_offset].decode("utf-8", "replace"))


def _cst_statements(module: cst.Module) -> list[cst.CSTNode]:
    """libcst's statements in source order: each small statement of a simple statement line or
    one-line suite, and each compound statement (an ``elif`` too), as CPython lists them."""
    out: list[cst.CSTNode] = []
    stack: list[list[cst.CSTNode]] = [list(reversed(module.body))]
    while stack:
        if not stack[-1]:
            stack.pop()
            continue
        node = stack[-1].pop()
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            out.extend(node.body)
            continue
        if isinstance(node, cst.BaseCompoundStatement):
            out.append(node)
        # Suites, `else:`/`finally:`/`except:`/`case` clauses and the statements inside them.
        stack.append(
            [
                child
                for child in reversed(non_trivia_children(node))
                if isinstance(child, _SUITE_PARTS)
            ]
        )
    return out


_SUITE_PARTS = (
    cst.BaseSuite,
    cst.SimpleStatementLine,
    cst.BaseCompoundStatement,
    cst.Else,
    cst.Finally,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.MatchCase,
)


def _ast_statements(tree: ast.Module) -> list[ast.stmt]:
    """CPython's statements in source order (the order of :func:`_cst_statements`)."""
    out: list[ast.stmt] = []
    stack: list[list] = [list(reversed(tree.body))]
    while stack:
        if not stack[-1]:
            stack.pop()
            continue
        node = stack[-1].pop()
        if isinstance(node, ast.stmt):
            out.append(node)
        inner: list = []
        for name in ("body", "handlers", "orelse", "finalbody", "cases"):
            inner.extend(getattr(node, name, None) or ())
        if isinstance(node, (ast.ExceptHandler, ast.match_case)):
            inner = list(node.body)
        stack.append(list(reversed(inner)))
    return out
