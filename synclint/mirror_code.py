"""The code of a mirrored node, exactly as libcst's ``code_for_node`` would print it.

Why: :mod:`synclint.screen` runs the model and the rules on a tree from :mod:`synclint.mirror`,
which keeps no whitespace and no parentheses, but the model compares the code of nodes (an
``assert not cond`` rules out ``if cond:``; two slices or two process groups are the same when
their text is) and some rules read it before they decide. Printed from the mirror, different source
texts would come out equal. :class:`SourceCode` cuts the text from the source instead, and answers
None wherever it cannot prove the cut is libcst's; ``tests/test_screen_code.py`` compares every
answer with libcst's on fixtures, generated programs and real projects.
"""

from __future__ import annotations

import ast
import keyword
import re

import libcst as cst

from synclint.astscan import statement_extent
from synclint.mirror import SourceText

_BLANK = " \t\f\\\r\n"
_LINE_ENDS = "\r\n"
_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
#: Before these, a ``(`` groups: ``= (``, ``not (``, ``assert (``.
_OPERATORS = frozenset("=+-*/%<>&|^~@,[{(:")
_GROUPING_KEYWORDS = frozenset(
    {"and", "assert", "elif", "else", "if", "in", "is", "not", "or", "return", "while"}
)


class SourceCode:
    """The source text of mirrored nodes, exactly as libcst would print them, when that is sure.

    libcst's code for an expression is the text from its first to its last character, including
    its own parentheses (``lpar``/``rpar``) and the whitespace and comments between, and nothing
    around it. ``ast`` gives the same extent without the node's own parentheses (those of a child
    at either edge are inside it). A node has parentheses of its own where the token after it is
    ``)`` and the token before it a ``(`` that groups (after an operator, a bracket, a comma or a
    keyword such as ``assert``), not a call's (after a name or a closing bracket):
    :meth:`_with_parentheses` widens the extent over each such pair, and gives up where it cannot
    tell. Two ``ast`` extents differ from libcst's: a generator that is a call's only argument
    (``ast`` includes the call's parentheses) and a subscript element (libcst includes the comma
    after it and the whitespace up to the next element); the first is never cut, the second only
    between plain elements. And libcst prints a node outside its block: see :meth:`_dedented`."""

    def __init__(self, source: SourceText, tree: ast.Module) -> None:
        self.source = source
        self.tree = tree
        self.text = source.text
        self.origins: dict = source.origins if source.origins is not None else {}

    def code(self, node: cst.CSTNode) -> str | None:
        origin = self.origins.get(node)
        if origin is None or origin.__class__ is ast.GeneratorExp:
            return None
        if origin.__class__ is tuple:
            return self._element(*origin)
        extent = self._with_parentheses(*self._extent(origin))
        if extent is None:
            return None
        return self._dedented(self.text[extent[0] : extent[1]], origin.lineno)

    def _dedented(self, text: str, lineno: int) -> str | None:
        """libcst prints a node alone, outside its block: the lines after the first lose the
        block's indentation where they start with it. Only the line breaks inside brackets are
        that kind of whitespace: after a backslash continuation the next line is kept as it is
        (``a and \\`` then ``and b``, in an ``if`` or in brackets alike). Text with a
        triple-quoted string, or a backslash that ends a comment, is refused."""
        if "\n" not in text and "\r" not in text:
            return text
        if "'''" in text or '"""' in text:
            return None
        indent = self._block_indent(lineno)
        lines = _LINE_BREAK.split(text)  # [line, break, line, break, ..., line]
        for i in range(2, len(lines), 2):
            before = lines[i - 2]
            if before.endswith("\\"):
                if "#" in before:
                    return None  # `# a \\`: a comment's backslash, or a string's `#`
                continue
            if indent:
                lines[i] = lines[i].removeprefix(indent)
        return "".join(lines)

    def _block_indent(self, lineno: int) -> str:
        """The indentation of the innermost statement that holds line ``lineno``: the block
        libcst's whitespace is relative to."""
        statements, found = self.tree.body, None
        while statements:
            inner = next(
                (s for s in statements if statement_extent(s)[0] <= lineno <= s.end_lineno), None
            )
            if inner is None:
                break
            found = inner
            statements = []
            for name in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(inner, name, ()):
                    if isinstance(child, ast.excepthandler):
                        statements.extend(child.body)
                    elif isinstance(child, ast.stmt):
                        statements.append(child)
        if found is None:
            return ""
        line = self.source.lines[found.lineno - 1]
        return line[: len(line) - len(line.lstrip(" \t\f"))]

    def _extent(self, node: ast.AST) -> tuple[int, int]:
        offset = self.source.offset
        return offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)

    def _element(self, part: ast.expr, following: ast.expr | None, subscript: ast.Subscript):
        """``x[a , b]``: libcst's first element is ``a , ``, its last ``b``; a trailing comma
        (``x[a , b ,]``) makes the last one run up to the bracket: ``b ,``."""
        if part.__class__ is ast.Starred or following.__class__ is ast.Starred:
            return None
        extent = self._extent(part)
        if part.__class__ is not ast.Slice:
            extent = self._with_parentheses(*extent)
            if extent is None:
                return None
        start, end = extent
        text = self.text
        if following is None:
            stop = self._extent(subscript)[1] - 1  # the closing bracket
            if text[stop] != "]":
                return None
            after = text[end:stop].strip(_BLANK)
            if after not in ("", ","):
                return None  # a comment: whose whitespace is it?
            if after or (part.__class__ is ast.Slice and text[end - 1] == ":"):
                # `x[a,\n]`, `x[a:\n]`: a trailing comma, or a slice's last colon, takes the
                # whitespace up to the bracket; after an expression it is the bracket's.
                return self._dedented(text[start:stop], part.lineno)
            return self._dedented(text[start:end], part.lineno)
        extent = self._extent(following)
        if following.__class__ is not ast.Slice:
            extent = self._with_parentheses(*extent)
            if extent is None:
                return None
        stop = extent[0]
        if text[end:stop].strip(_BLANK) != ",":
            return None  # a comment between
        return self._dedented(text[start:stop], part.lineno)

    def _with_parentheses(self, start: int, end: int) -> tuple[int, int] | None:
        """The extent ``[start, end)`` widened over the node's own parentheses, or None when it is
        not sure which parentheses are the node's."""
        text, size = self.text, len(self.text)
        while True:
            after = self._next(end)
            if after >= size or text[after] != ")":
                return start, end
            before = self._previous(start)
            if before is None:
                return None
            if before < 0 or text[before] != "(":
                return start, end
            grouping = self._groups(before)
            if grouping is None:
                return None
            if not grouping:
                return start, end  # a call's parentheses
            start, end = before, after + 1

    def _groups(self, paren: int) -> bool | None:
        """Does the ``(`` at ``paren`` group (True), open a call's arguments (False), or cannot
        that be told from the token before it (None)?"""
        text = self.text
        before = self._previous(paren)
        if before is None or before < 0 or self._breaks(before, paren):
            return None  # on an earlier line, the token before may end another statement
        c = text[before]
        if c in ")]":
            return False  # `f(x)(y)`, `x[0](y)`
        if c in _OPERATORS:
            return True
        if not (c.isalnum() or c == "_"):
            return None  # a string's quote, a dot, anything unusual
        word_start = before
        while word_start > 0 and (text[word_start - 1].isalnum() or text[word_start - 1] == "_"):
            word_start -= 1
        word = text[word_start : before + 1]
        if word in _GROUPING_KEYWORDS:
            return True
        if keyword.iskeyword(word) or not word.isidentifier():
            return None  # `with (`, `except (`, `1(`: not worth being sure about
        return False

    def _breaks(self, start: int, end: int) -> bool:
        text = self.text
        return text.find("\n", start, end) >= 0 or text.find("\r", start, end) >= 0

    def _next(self, i: int) -> int:
        """The index of the first character of the next token at or after ``i``."""
        text, n = self.text, len(self.text)
        while i < n:
            c = text[i]
            if c == "#":
                while i < n and text[i] not in _LINE_ENDS:
                    i += 1
            elif c in _BLANK:
                i += 1
            else:
                break
        return i

    def _previous(self, i: int) -> int | None:
        """The index of the last character of the token before ``i`` (-1 at the start), or None
        when a comment may lie between (the line reached has a ``#``)."""
        text = self.text
        i -= 1
        crossed = False
        while i >= 0 and text[i] in _BLANK:
            crossed = crossed or text[i] in _LINE_ENDS
            i -= 1
        if crossed and i >= 0:
            line_start = max(text.rfind("\n", 0, i), text.rfind("\r", 0, i)) + 1
            if "#" in text[line_start : i + 1]:
                return None
        return i
