"""Questions about a file's text that spare it CPython's parser.

Every file a rule's trigger words and pattern match is parsed with ``ast`` for the rule's syntax
check. For SYN302 that was most of a cold run's parsing on vLLM: ``.to(``, ``.cuda(`` and
``.cpu(`` are everywhere, a bare ``x.to(...)`` statement almost nowhere. :func:`may_be_bare_call`
answers the same question from the text around each occurrence, looking only at its own line.

It is a necessary condition, never a guess: it says False only when every occurrence is certainly
not the callee of an expression statement; anything it cannot read for sure (a string, a comment,
a line break, a backslash between the statement's start and the call's end) is a yes, and the
syntax check decides. ``tests/test_textscan.py`` checks it against the ``ast`` on generated
programs and real projects.
"""

from __future__ import annotations

import re

_SPACE = " \t\f"
_NEWLINE = "\r\n"
#: Characters this scan does not read through: strings, comments, continuations.
_UNREADABLE = "\"'#\\"
_OPENING = "([{"
_CLOSING = ")]}"


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_" or c > "\x7f"


def may_be_bare_call(text: str, attribute: re.Pattern) -> bool:
    """Could some match of ``attribute`` (a pattern matching ``.name``, from the dot to the end of
    the name) be the callee of a bare statement ``<expr>.name(...)``?"""
    for match in attribute.finditer(text):
        end = _after_call(text, match.end())
        if end is not None and _ends_statement(text, end) and _starts_statement(text, match.start()):
            return True
    return False


def _after_call(text: str, i: int) -> int | None:
    """Where the call of the attribute ending at ``i`` ends (just past its ``)``); ``-1`` when that
    cannot be read here (it may still be a call); None when the attribute is certainly not called
    (``torch.cuda.Stream``: ``.cuda`` is followed by ``.``)."""
    n = len(text)
    while i < n and text[i] in _SPACE:
        i += 1
    if i == n:
        return None
    if text[i] != "(":
        # A line break, comment or continuation before the ``(``, or ``(x.to)(...)``: unreadable.
        return -1 if text[i] in _NEWLINE or text[i] in _UNREADABLE or text[i] == ")" else None
    depth = 0
    while i < n:
        c = text[i]
        if c in _UNREADABLE:
            return -1
        if c in _OPENING:
            depth += 1
        elif c in _CLOSING:
            depth -= 1
            if not depth:
                return i + 1
        i += 1
    return -1


def _ends_statement(text: str, end: int) -> bool:
    """Can a statement end at ``end``? (``x.to(d).float()``, ``x.to(d),`` and ``x.to(d) + y`` are
    not the call alone; ``-1``, an unreadable end, may be.)"""
    if end < 0:
        return True
    n = len(text)
    while end < n and text[end] in _SPACE:
        end += 1
    return end == n or text[end] in _NEWLINE or text[end] in _UNREADABLE or text[end] in ";)"


def _starts_statement(text: str, dot: int) -> bool:
    """Could the expression before the ``.`` at ``dot`` begin a statement? It must be a primary
    (names, attributes, calls, subscripts, a bracketed atom) with only indentation, a ``;`` or a
    ``:`` before it (``y = x.to(d)``, ``f(x.to(d))`` and ``return x.to(d)`` are not statements)."""
    depth = 0
    i = dot - 1
    while i >= 0:
        c = text[i]
        if c in _NEWLINE or c in _UNREADABLE:
            return True  # the line started, or something this scan does not read through
        if depth:
            if c in _CLOSING:
                depth += 1
            elif c in _OPENING:
                depth -= 1
        elif c in _CLOSING:
            depth = 1
        elif c in _OPENING:
            # `f(x.to(d))` or `[x.to(d)]`; but `(x.to(d))` alone is a statement too.
            return c == "(" and _statement_boundary_before(text, i)
        elif c in _SPACE:
            j = _before_spaces(text, i)
            if j < 0:
                return True
            before, after = text[j], text[i + 1]
            if before in _NEWLINE or before in _UNREADABLE or before in ";:":
                return True
            # Spaces inside a primary: `x .to`, `f (a)`, `a [0]`, `x. to`. Anything else (`return
            # x`, `= x`, `await x`) means the primary is not at the statement's start.
            trailer = after in ".([" and (_word_char(before) or before in _CLOSING)
            if not (trailer or (before == "." and _word_char(after))):
                return False
            i = j
            continue
        elif c in ";:":
            return True
        elif not (_word_char(c) or c == "."):
            return False  # an operator, `=`, `,`, `@`...
        i -= 1
    return True


def _before_spaces(text: str, i: int) -> int:
    """The index of the last character before ``i`` that is not a space (-1: none)."""
    j = i - 1
    while j >= 0 and text[j] in _SPACE:
        j -= 1
    return j


def _statement_boundary_before(text: str, i: int) -> bool:
    j = _before_spaces(text, i)
    return j < 0 or text[j] in _NEWLINE or text[j] in _UNREADABLE or text[j] in ";:("
