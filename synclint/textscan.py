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

:func:`may_pass_true_later` answers the non-blocking copy rules' question (is ``True`` handed to
``copy_`` or ``to`` as a positional argument after the first?) by reading each call's argument
list, skipping strings and comments; an f-string or anything else it cannot read through is a yes.
"""

from __future__ import annotations

import re

from synclint.astscan import GAP

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


#: What may stand between a callee and its ``(``: spaces, line breaks, continuations, comments.
_GAP = re.compile(GAP)
#: What the argument scan stops at: brackets, commas, comments, strings and continuations.
_ARGUMENT_MARK = re.compile(r"[()\[\]{},#'\"\\]")
#: String prefixes the argument scan reads through (f-strings and t-strings may nest quotes).
_PLAIN_PREFIXES = frozenset({"", "r", "u", "b", "br", "rb"})


def may_pass_true_later(text: str, attribute: re.Pattern) -> bool:
    """Could some call of an attribute matching ``attribute`` (``.copy_``, ``.to``) be handed the
    name ``True`` as a whole argument after its first (``dst.copy_(src, True)``,
    ``x.to(d, (True))``)? Arguments nested deeper (``f(a, True)`` inside the call) do not count;
    a call this scan cannot read to its end counts."""
    for match in attribute.finditer(text):
        if _true_after_first(text, match.end()) is not False:
            return True
    return False


def _true_after_first(text: str, i: int) -> bool | None:
    """Is ``True`` a whole argument after the first of the call whose callee ends at ``i``?
    False also when the attribute is not called there; None when the call cannot be read."""
    i = _GAP.match(text, i).end()
    if i >= len(text) or text[i] != "(":
        # `(x.to)(d, True)`: the call is after the bracket; anything else is no call.
        return None if i < len(text) and text[i] == ")" else False
    depth, argument, index = 1, [], 0
    i += 1
    while True:
        mark = _ARGUMENT_MARK.search(text, i)
        if mark is None:
            return None  # the file ends inside the call
        argument.append(text[i : mark.start()])
        c, i = mark.group(), mark.end()
        if c == "#":
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
        elif c == "\\":
            i += 1  # a continuation: the line break after it is space
        elif c in "'\"":
            if _string_prefix(text, mark.start()) not in _PLAIN_PREFIXES:
                return None  # an f-string (its fields may hold quotes) or not a string at all
            i = _string_end(text, mark.start())
            if i < 0:
                return None
            argument.append("''")
        elif c in "([{":
            depth += 1
            argument.append(c)
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return index > 0 and _is_true("".join(argument))
            argument.append(c)
        elif depth > 1:
            argument.append(c)  # a comma inside a nested bracket
        else:  # a comma between two arguments
            if index > 0 and _is_true("".join(argument)):
                return True
            argument, index = [], index + 1


def _string_prefix(text: str, quote: int) -> str:
    """The word characters just before the quote at ``quote``, lowered (``rb``, ``f``, or an
    identifier when the quote follows a name, which is no string prefix)."""
    start = quote
    while start > 0 and _word_char(text[start - 1]):
        start -= 1
    return text[start:quote].lower()


def _string_end(text: str, start: int) -> int:
    """Just past the string literal whose opening quote is at ``start``; -1 when it does not end
    (or a one-line string meets a line break)."""
    quote = text[start]
    triple = text.startswith(quote * 3, start)
    closing = quote * 3 if triple else quote
    i = start + len(closing)
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2  # an escape, or in a raw string a backslash that keeps the quote in
        elif text.startswith(closing, i):
            return i + len(closing)
        elif not triple and c in _NEWLINE:
            return -1
        else:
            i += 1
    return -1


def _is_true(argument: str) -> bool:
    """Is this argument's text (strings and comments already left out) the name ``True``,
    perhaps in parentheses?"""
    stripped = "".join(argument.split())
    while stripped.startswith("(") and stripped.endswith(")"):
        stripped = stripped[1:-1]
    return stripped == "True"
