"""Parse with libcst only the top-level definitions a rule could report on.

Why: on a large repository most of a cold run is libcst parsing and the model walking files that do
mention streams, but mostly in a few functions: DeepSpeed's 5,900-line ``engine.py`` has a handful.
CPython's ``ast`` (already built for the prefilter) tells where each top-level function and class
starts and ends; a definition that no enabled rule's trigger can match, and that is not connected by
name to one that can, is replaced by ``pass`` and blank lines before libcst sees the text. Lines keep
their numbers and columns, so positions, code frames and fixes are those of the original file.

A definition is *relevant* when, on its own text, some rule that may fire on the file passes the same
test the file-level prefilter applies (a trigger word, the trigger pattern, the ``ast`` syntax check).
Relevance then spreads by name, to a fixed point:

* a relevant statement at module level makes the names it binds relevant (``from time import
  perf_counter``, ``STREAM = torch.cuda.Stream()``), and makes the whole module scope relevant;
* a definition that mentions a relevant name is relevant (it calls a stream helper, uses the alias);
* a definition whose name a relevant text mentions is relevant (a helper summarised for its caller).

Everything at module level other than definitions is kept. Classes are kept or dropped whole: methods
share attributes, so one method's side-stream work can race with another's plain access. What is
dropped therefore cannot contain a finding, and what is kept sees the same helpers, aliases and
attributes as before; ``tests/test_prefilter_differential.py`` checks that linting with and without
this gives identical results, on fixtures, generated code and real projects.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

#: A rule's file-level test, applied to one unit of text: (trigger words, trigger pattern, check).
Trigger = tuple[tuple[str, ...], "re.Pattern | None", "Callable[[ast.Module], bool] | None"]

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")  # ``ast`` counts lines as these endings do
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class _Unit:
    start: int  # first line (a decorator's, for a decorated definition), 1-based
    end: int  # last line
    node: ast.stmt
    text: str
    words: frozenset[str] = field(default_factory=frozenset)
    binds: frozenset[str] = field(default_factory=frozenset)
    relevant: bool = False


def _matches(text: str, node: ast.stmt, triggers: Sequence[Trigger]) -> bool:
    for words, pattern, check in triggers:
        if not any(word in text for word in words):
            continue
        if pattern is not None and not pattern.search(text):
            continue
        if check is None or check(ast.Module(body=[node], type_ignores=[])):
            return True
    return False


def _bound_names(node: ast.stmt) -> frozenset[str]:
    """Names a module-level statement binds: definitions, imports, assignment targets."""
    if isinstance(node, _DEFINITIONS):
        return frozenset({node.name})
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            for alias in sub.names:
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(sub, _DEFINITIONS):
            names.add(sub.name)
    return frozenset(names)


def relevant_slice(text: str, tree: ast.Module, triggers: Sequence[Trigger]) -> str | None:
    """``text`` with the irrelevant top-level definitions blanked out, or None when every
    definition is relevant (then there is nothing to save)."""
    lines = _LINE.findall(text)
    if lines and lines[-1] == "":
        lines.pop()
    units: list[_Unit] = []
    for node in tree.body:
        decorators = getattr(node, "decorator_list", ())
        start = min([node.lineno, *(d.lineno for d in decorators)])
        end = node.end_lineno or node.lineno
        unit_text = "".join(lines[start - 1 : end])
        units.append(
            _Unit(
                start,
                end,
                node,
                unit_text,
                frozenset(_WORD.findall(unit_text)),
                _bound_names(node),
                _matches(unit_text, node, triggers),
            )
        )
    definitions = [u for u in units if isinstance(u.node, _DEFINITIONS)]
    if not definitions or all(u.relevant for u in definitions):
        return None
    module_level = [u for u in units if not isinstance(u.node, _DEFINITIONS)]
    names: set[str] = set()  # relevant names
    mentioned: set[str] = set()  # words of relevant text
    for unit in module_level:
        if unit.relevant:
            names |= unit.binds
    if any(unit.relevant for unit in module_level):  # the module scope is analysed as one
        for unit in module_level:
            mentioned |= unit.words
    for unit in definitions:
        if unit.relevant:
            names |= unit.binds
            mentioned |= unit.words
    changed = True
    while changed:
        changed = False
        for unit in definitions:
            if not unit.relevant and (unit.words & names or unit.binds & mentioned):
                unit.relevant = changed = True
                names |= unit.binds
                mentioned |= unit.words
    dropped = [u for u in definitions if not u.relevant]
    if not dropped:
        return None
    for unit in dropped:
        lines[unit.start - 1] = "pass" + _ending(lines[unit.start - 1])
        for number in range(unit.start, unit.end):
            lines[number] = _ending(lines[number])
    return "".join(lines)


def _ending(line: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith(("\n", "\r")):
        return line[-1]
    return ""
