"""Cheap questions about a file, asked of CPython's ``ast`` before libcst is involved.

CPython's parser is written in C and about ten times faster than libcst's; a rule whose precondition
is syntactic (a statement of some shape, a name being used) can rule a file out on the ``ast`` and
spare it the libcst parse and the model. Only statements are walked here, not every expression node,
because walking in Python costs more than parsing.
"""

from __future__ import annotations

import ast
import re
import symtable
import warnings
from functools import lru_cache
from itertools import chain
from typing import Iterator

_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")
#: What may stand between a callee's name and its ``(``: spaces, line breaks and comments (inside
#: brackets), backslash continuations, and the closing brackets of a parenthesized callee
#: (``(torch.cuda.Stream)()``).
CALL_GAP = r"[\s\\)]*(?:#[^\r\n]*[\r\n][\s\\)]*)*"
#: What may stand between two tokens inside brackets (``.`` and an attribute, a name and ``as``).
GAP = r"[\s\\]*(?:#[^\r\n]*[\r\n][\s\\]*)*"


def python_parse(text: str, path: str) -> tuple[ast.Module | None, SyntaxError | None]:
    """CPython's syntax tree of ``text``, or its complaint: (tree, None) or (None, error). Both are
    None for input CPython gives up on otherwise (too deep, too large, NUL bytes)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(text, path, "exec", ast.PyCF_ONLY_AST), None
    except SyntaxError as error:
        return None, error
    except (ValueError, RecursionError, MemoryError, OverflowError):
        return None, None


def compiles(text: str, path: str) -> bool:
    """Does ``text`` certainly parse? Asked of files that no rule can fire on, which need no tree.

    Python's symbol-table pass parses with the same parser as :func:`python_parse` but keeps the
    tree in C: about a quarter cheaper than building (and freeing) every ``ast`` node. It also
    rejects a few things the parser accepts (``nonlocal`` at module level), so False means only
    "ask :func:`python_parse`", never "does not parse"."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            symtable.symtable(text, path, "exec")
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False


def statement_extent(node: ast.stmt) -> tuple[int, int]:
    """First line (a decorator's, for a decorated definition) and last line of ``node``."""
    decorators = getattr(node, "decorator_list", ())
    start = min([node.lineno, *(d.lineno for d in decorators)])
    return start, node.end_lineno or node.lineno


def _block_fields() -> dict[type, tuple[str, ...]]:
    """The statement blocks of each ``ast`` node type that has any (``If``: body and orelse,
    ``ExceptHandler``: body, ...), read from ``ast`` itself, in :data:`_BLOCKS` order."""
    table: dict[type, tuple[str, ...]] = {}
    stack = [ast.AST]
    while stack:
        for node_type in stack.pop().__subclasses__():
            stack.append(node_type)
            fields = tuple(f for f in _BLOCKS if f in getattr(node_type, "_fields", ()))
            if fields:
                table[node_type] = fields
    return table


_BLOCK_FIELDS = _block_fields()


def iter_statements(tree: ast.AST) -> Iterator[ast.AST]:
    """Every statement in ``tree`` (nested blocks included: functions, classes, loops, ``try``,
    ``match``), in no particular order. Except handlers and match cases are walked into.

    Most statements hold no block: a dictionary look-up by type tells, instead of asking each
    statement for five fields (this runs over every statement of a file, several times)."""
    stack: list[ast.AST] = list(getattr(tree, "body", ()))
    blocks_of = _BLOCK_FIELDS.get
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            yield node
        fields = blocks_of(node.__class__)
        if fields is not None:
            for field in fields:
                block = getattr(node, field)
                if block:
                    stack.extend(block)


def has_bare_method_call(tree: ast.AST, methods: frozenset[str]) -> bool:
    """Is there an expression statement ``<expr>.<method>(...)`` with ``method`` in ``methods``?"""
    for statement in iter_statements(tree):
        if type(statement) is ast.Expr:
            value = statement.value
            if (
                type(value) is ast.Call
                and type(value.func) is ast.Attribute
                and value.func.attr in methods
            ):
                return True
    return False


def uses_identifier(tree: ast.AST, names: frozenset[str]) -> bool:
    """Is one of ``names`` used as a name or an attribute anywhere? (A full walk: ask it last.)"""
    for node in ast.walk(tree):
        kind = type(node)
        if (kind is ast.Name and node.id in names) or (
            kind is ast.Attribute and node.attr in names
        ):
            return True
    return False


def imports_or_names_module(
    tree: ast.AST, modules: frozenset[str], text: str | None = None
) -> bool:
    """Is one of ``modules`` imported (any form, any depth), or used as a bare name?

    synclint's import resolver qualifies an unimported bare ``time`` as the module ``time``, so a
    bare use counts as much as an import. Given the ``text`` of ``tree``, a bare use is looked for
    only where the text has ``time.`` (a module is used through its attributes): the full walk it
    needs otherwise costs more than parsing."""
    # Imports are mostly at the top: look there before walking every statement of the file.
    for statement in chain(getattr(tree, "body", ()), iter_statements(tree)):
        kind = type(statement)
        if kind is ast.Import:
            if any(alias.name.split(".")[0] in modules for alias in statement.names):
                return True
        elif kind is ast.ImportFrom:
            if (statement.module or "").split(".")[0] in modules:
                return True
            if any(alias.name in modules for alias in statement.names):
                return True
    if text is not None and not any(_attribute_of(module).search(text) for module in modules):
        return False
    if text is not None and not any(_maybe_bare(module, text) for module in modules):
        return False  # every `time` is an attribute (`self.time.sleep`): no walk of the tree
    return any(type(node) is ast.Name and node.id in modules for node in ast.walk(tree))


def _maybe_bare(name: str, text: str) -> bool:
    """Could ``name`` be used as a bare name somewhere in ``text``? No when every occurrence of
    the identifier follows a ``.`` on its line (spaces between allowed): it is an attribute then.
    Anything else (an occurrence at a line's start, after a backslash, in a string) says yes."""
    for match in _identifier(name).finditer(text):
        i = match.start() - 1
        while i >= 0 and text[i] in " \t":
            i -= 1
        if i < 0 or text[i] != ".":
            return True
    return False


@lru_cache(maxsize=32)
def _identifier(name: str) -> re.Pattern:
    """``name`` as a whole identifier."""
    word = re.escape(name)
    return re.compile(rf"{word}(?<!\w{word})(?!\w)")


@lru_cache(maxsize=32)
def _attribute_of(name: str) -> re.Pattern:
    """``name`` as a whole word followed by ``.`` (literal first: fast to search)."""
    return re.compile(rf"{re.escape(name)}(?<!\w{re.escape(name)})\s*\.")


def terminal_name(node: ast.AST) -> str | None:
    """The last name of a dotted expression: ``Stream`` for ``torch.cuda.Stream``, ``S`` for ``S``."""
    kind = type(node)
    if kind is ast.Name:
        return node.id
    if kind is ast.Attribute:
        return node.attr
    return None


def bound_names(tree: ast.Module, text: str, names: frozenset[str]) -> frozenset[str]:
    """``names`` and every name the file may bind to one of them, the two ways synclint's import
    resolvers let a call of ``S`` stand for ``torch.cuda.Stream``: an import that renames it
    (``from torch.cuda import Stream as S``, at any depth: found in the text, so one in a comment
    only adds a name) and an assignment at module level (``S = torch.cuda.Stream``, also chained).
    A superset is safe: it only keeps more files."""
    found = set(names)
    for name in names:
        if name in text:
            found.update(_renamed(name).findall(text))
    changed = True
    while changed:
        changed = False
        for statement in tree.body:
            kind = type(statement)
            if kind is ast.Assign:
                targets, value = statement.targets, statement.value
            elif kind is ast.AnnAssign and statement.value is not None:
                targets, value = [statement.target], statement.value
            else:
                continue
            if terminal_name(value) in found:
                for target in targets:
                    if type(target) is ast.Name and target.id not in found:
                        found.add(target.id)
                        changed = True
    return frozenset(found)


def may_call(text: str, names: frozenset[str]) -> bool:
    """Could ``text`` call one of ``names`` (as ``name(...)`` or ``<expr>.name(...)``)? Any
    spelling Python allows between the name and ``(`` counts (:data:`CALL_GAP`); so does a
    call-like text in a string or comment, which only keeps more."""
    return any(name in text and _call_of(name).search(text) for name in names)


def call_starts(text: str, names: frozenset[str]) -> list[int]:
    """Offsets of the calls of ``names`` in ``text`` (as :func:`may_call` finds them)."""
    return [m.start() for name in names if name in text for m in _call_of(name).finditer(text)]


@lru_cache(maxsize=64)
def named_uncalled(name: str) -> re.Pattern:
    """``name`` as a whole word and not called (literal first: fast to search)."""
    word = re.escape(name)
    return re.compile(rf"{word}(?<!\w{word})(?!\w)(?!{CALL_GAP}\()")


def line_numbers(text: str, offsets: list[int]) -> list[int]:
    """The line (from 1, as ``ast`` counts: ``\\r\\n``, ``\\r`` or ``\\n`` ends one) of each of the
    sorted ``offsets`` in ``text``."""
    lines, line, done = [], 1, 0
    for offset in offsets:
        chunk = text[done:offset]
        line += chunk.count("\n") + chunk.count("\r") - chunk.count("\r\n")
        if chunk.startswith("\n") and done and text[done - 1] == "\r":
            line -= 1  # a `\r\n` split between two chunks was counted twice
        lines.append(line)
        done = offset
    return lines


def has_with_call_of(tree: ast.AST, names: frozenset[str]) -> bool:
    """Is there a ``with`` (or ``async with``) over a call of one of ``names``, ``with
    torch.cuda.graph(g):``? (The callee's last name is compared.)"""
    for statement in iter_statements(tree):
        if type(statement) in (ast.With, ast.AsyncWith):
            for item in statement.items:
                expr = item.context_expr
                if type(expr) is ast.Call and terminal_name(expr.func) in names:
                    return True
    return False


@lru_cache(maxsize=64)
def _call_of(name: str) -> re.Pattern:
    """``name`` as a whole word, then a call's ``(`` (literal first: fast to search)."""
    word = re.escape(name)
    return re.compile(rf"{word}(?<!\w{word}){CALL_GAP}\(")


@lru_cache(maxsize=64)
def _renamed(name: str) -> re.Pattern:
    """``name as alias`` (an import that renames ``name``); the group is the alias."""
    word = re.escape(name)
    return re.compile(rf"{word}(?<!\w{word}){GAP}as(?!\w){GAP}([^\W\d]\w*)")
