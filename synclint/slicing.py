"""Parse with libcst only the top-level definitions a rule could report on.

Why: on a large repository most of a cold run is libcst parsing and the model walking files that do
mention streams, but mostly in a few functions: DeepSpeed's 5,900-line ``engine.py`` has a handful.
CPython's ``ast`` (already built for the prefilter) tells where each top-level function and class
starts and ends; a definition that no enabled rule's trigger can match, and that is not connected by
name to one that can, is replaced by ``pass`` and blank lines before libcst sees the text. Lines keep
their numbers and columns, so positions, code frames and fixes are those of the original file.

A definition is *relevant* when, on its own text, some rule that may fire on the file passes the same
test the file-level prefilter applies (trigger words, trigger pattern, text check, ``ast`` syntax
check) and holds what the rule requires (``Rule.requires_pattern``: SYN204 needs the event's
creation in the very function it reports on). Relevance then spreads by name, to a fixed point,
along the only ways the model lets one definition's analysis depend on another's text:

* a module-level statement that mentions a rule's trigger or requirement (``from torch.cuda import
  Event as E``, ``STREAM = torch.cuda.Stream()``) makes the names it binds relevant, and so does one
  that uses such a name (``E2 = E``); a definition using one is relevant (plain ``import
  torch.cuda`` binds ``torch``, whose users spell the rest out);
* a function that relevant text names is relevant: the model summarises module-level helpers for
  their callers (does it synchronize? return the current stream?), and SYN2xx rules follow event
  factories into them. A caller of a relevant helper only sees that summary, on which no rule
  reports by itself, so callers are not kept for it; a class that relevant text names is relevant
  too when a method of it says ``synchronize`` or a blocking read (``cpu``, ``item``...) and is
  called on something other than ``self``: the model learns which such methods make the host
  wait, for calls on the class's instances (``_Builder.summarise_methods``). Such a class is
  relevant also when relevant text calls one of those methods by name (``self.kv_cache.update(k)``
  names neither the class nor where it is made), and then so is every definition that names the
  class (``kv_cache = KVCache(...)``: the model learns what the attribute holds); other classes
  are never summarised or followed;
* a definition with an ``import`` that relevant text uses is relevant: import resolution reads
  imports at any depth;
* a definition that names a relevant ``@contextmanager`` function is relevant: the model walks
  such a function's halves where a ``with`` calls it (:mod:`synclint.model.context_managers`),
  so its stream work becomes the caller's.

Everything at module level other than definitions is kept (and, if any of it is relevant, all its
words count as relevant text, since the module body is analysed as one scope). Classes are kept or
dropped whole: methods share attributes, so one method's side-stream work can race with another's
plain access. Rules still see the whole file's text (``RuleContext.source``), only libcst gets the
slice. ``tests/test_prefilter_differential.py`` and ``tests/test_slicing.py`` check that linting with
and without this gives identical results on fixtures, generated and glued programs and (when
fetched) real projects; ``benchmarks/RESULTS.md`` records the same check on five real projects.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterator, NamedTuple, Sequence

from synclint.astscan import iter_statements, statement_extent

Patterns = tuple[re.Pattern, ...]  # alternatives: any may match
Check = Callable[[ast.Module, str], bool]


def _any(patterns: Patterns, text: str, memo: dict) -> bool:
    """Does one of ``patterns`` occur in ``text``? (``memo`` belongs to this one text.)"""
    for pattern in patterns:
        hit = memo.get(pattern)
        if hit is None:
            hit = memo[pattern] = pattern.search(text) is not None
        if hit:
            return True
    return False


class Trigger(NamedTuple):
    """A rule's text test (see ``Rule``): one of ``words`` occurs, ``pattern`` and ``requires``
    (when given) each match, and ``text_check`` (when given) says yes. Rules with the same test
    share one Trigger, and a ``memo`` shared over one text makes each word and pattern search
    happen once (``stream`` is a word of four rules: an absent word is a scan of the whole text
    each time it is asked)."""

    words: tuple[str, ...]
    pattern: Patterns | None = None
    requires: Patterns | None = None
    text_check: Callable[[str], bool] | None = None

    def passes(self, text: str, memo: dict, leave_out_requires: bool = False) -> bool:
        """Does the test pass on ``text``? With ``leave_out_requires``, only the words and the
        pattern are asked (the lenient test for module-level statements)."""
        for word in self.words:  # a loop, not any(...): this runs ~100k times on a large tree
            hit = memo.get(word)
            if hit is None:
                hit = memo[word] = word in text
            if hit:
                break
        else:
            return False
        if self.pattern is not None and not _any(self.pattern, text, memo):
            return False
        if leave_out_requires:
            return True
        if self.requires is not None and not _any(self.requires, text, memo):
            return False
        return self.text_check is None or self.text_check(text)


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")  # ``ast`` counts lines as these endings do
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class _Unit:
    index: int  # in the module's body
    node: ast.stmt
    text: str
    binds: frozenset[str] = field(default_factory=frozenset)  # module level: names it binds;
    # a definition: names imported inside it
    relevant: bool = False

    @cached_property
    def words(self) -> frozenset[str]:
        """The identifiers in its text (found only when needed: when every definition of a file
        is relevant, nothing spreads and no unit's words are looked at)."""
        return frozenset(_WORD.findall(self.text))


def _matches(text: str, node: ast.stmt, triggers: Sequence[tuple[Trigger, Check | None]]) -> bool:
    """Does some rule's test pass on this definition's own text? (A syntax check gets the text
    after as many empty lines as precede the definition: its line numbers are the tree's.)"""
    memo: dict = {}
    placed = None
    for trigger, check in triggers:
        if not trigger.passes(text, memo):
            continue
        if check is None:
            return True
        if placed is None:
            placed = "\n" * (statement_extent(node)[0] - 1) + text
        if check(ast.Module(body=[node], type_ignores=[]), placed):
            return True
    return False


def _binds_relevant(text: str, triggers: Sequence[tuple[Trigger, Check | None]]) -> bool:
    """Is a module-level statement relevant? More leniently than a definition: when some rule's
    trigger words and pattern occur in it (its ``ast`` check is left out: ``from torch.cuda import
    graph as capture`` holds no ``with``, but its user will), or what a rule requires does (``from
    torch.cuda import Event as E``). Module-level statements are always kept; this only decides
    whether the names they bind make their users relevant."""
    memo: dict = {}
    for trigger, _ in triggers:
        if trigger.requires is not None and _any(trigger.requires, text, memo):
            return True
        if trigger.passes(text, memo, leave_out_requires=True):
            return True
    return False


def _imports(node: ast.stmt) -> Iterator[tuple[str, str, bool]]:
    """(bound name, what it names, whether it is a plain ``import a.b``) for every import in
    ``node``, at any depth. (Imports are statements: expressions are not walked.)"""
    for sub in iter_statements(ast.Module(body=[node], type_ignores=[])):
        if isinstance(sub, ast.Import):
            for alias in sub.names:
                if alias.asname:
                    yield alias.asname, alias.name, False
                else:
                    head = alias.name.split(".")[0]
                    yield head, head, True
        elif isinstance(sub, ast.ImportFrom):
            base = "." * sub.level + (sub.module or "")
            for alias in sub.names:
                yield alias.asname or alias.name, f"{base}.{alias.name}", False


def _bound_names(node: ast.stmt) -> frozenset[str]:
    """Names a module-level statement binds that its users do not spell out: assignment targets,
    ``from`` imports, aliased imports, nested definitions. (A plain ``import torch.cuda`` binds
    ``torch``, but its users write ``torch.cuda.Stream`` in full, triggers and all.)"""
    names = {name for name, _, plain in _imports(node) if not plain}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, _DEFINITIONS):
            names.add(sub.name)
    return frozenset(names)


def _imports_inside(
    node: ast.stmt, text: str, at_module_level: set[tuple[str, str]]
) -> frozenset[str]:
    """Names imported inside a definition that module-level imports do not already bind the same
    way: synclint's import resolvers read imports at any depth, so a function's ``import
    torch.cuda as tc`` names ``tc`` for the whole file."""
    if "import" not in text:
        return frozenset()
    return frozenset(
        name for name, target, _ in _imports(node) if (name, target) not in at_module_level
    )


def relevant_slice(
    text: str, tree: ast.Module, triggers: Sequence[tuple[Trigger, Check | None]]
) -> str | None:
    """``text`` with the irrelevant top-level definitions blanked out, or None when every
    definition is relevant (then there is nothing to save)."""
    dropped = irrelevant_definitions(text, tree, triggers)
    return blank(text, tree, dropped) if dropped else None


def irrelevant_definitions(
    text: str, tree: ast.Module, triggers: Sequence[tuple[Trigger, Check | None]]
) -> frozenset[int]:
    """Indices in ``tree.body`` of the top-level definitions no rule in ``triggers`` could report
    on (see the module docstring); empty when every definition is relevant."""
    lines = _split_lines(text)
    at_module_level = {
        (name, target)
        for node in tree.body
        if not isinstance(node, _DEFINITIONS)
        for name, target, _ in _imports(node)
    }
    units: list[_Unit] = []
    for index, node in enumerate(tree.body):
        start, end = statement_extent(node)
        unit_text = "".join(lines[start - 1 : end])
        definition = isinstance(node, _DEFINITIONS)
        units.append(
            _Unit(
                index,
                node,
                unit_text,
                (
                    _imports_inside(node, unit_text, at_module_level)
                    if definition
                    else _bound_names(node)
                ),
                (
                    _matches(unit_text, node, triggers)
                    if definition
                    else _binds_relevant(unit_text, triggers)
                ),
            )
        )
    definitions = [u for u in units if isinstance(u.node, _DEFINITIONS)]
    if not definitions or all(u.relevant for u in definitions):
        return frozenset()
    module_level = [u for u in units if not isinstance(u.node, _DEFINITIONS)]
    # Names bound by relevant module-level statements (aliases, globals): their users are relevant.
    # A module-level statement that uses such a name binds relevant names too (``Ev = cuda.Event``
    # then ``Ev2 = Ev``: the import resolver follows the chain).
    names = {name for unit in module_level if unit.relevant for name in unit.binds}
    spreading = bool(names)
    while spreading:
        spreading = False
        for unit in module_level:
            if not unit.relevant and unit.binds and unit.words & names:
                unit.relevant = spreading = True
                names |= unit.binds
    # Words of relevant code: a function it names may be summarised for it, an import it names
    # may resolve its aliases.
    mentioned: set[str] = set()
    if any(unit.relevant for unit in module_level):  # the module scope is analysed as one
        for unit in module_level:
            mentioned |= unit.words
    for unit in definitions:
        if unit.relevant:
            mentioned |= unit.words
    waiting = {
        u.index: methods
        for u in definitions
        if isinstance(u.node, ast.ClassDef) and (methods := _waiting_methods(u, text, lines))
    }
    changed = True
    while changed:
        changed = False
        managers = {u.node.name for u in definitions if u.relevant and _is_context_manager(u.node)}
        # A class kept for a method that waits is kept with the code that makes its instances:
        # `kv_cache = KVCache(...)` then `b.attention.kv_cache = kv_cache` tells the model what
        # `self.kv_cache.update(k, v)` calls (`_Builder.attribute_class`).
        makers = {u.node.name for u in definitions if u.relevant and u.index in waiting}
        for unit in definitions:
            if unit.relevant:
                continue
            if isinstance(unit.node, ast.ClassDef):
                methods = waiting.get(unit.index, frozenset())
                # Named by relevant code, or one of its waiting methods called there.
                helper = bool(methods) and (
                    unit.node.name in mentioned or not methods.isdisjoint(mentioned)
                )
            else:
                helper = unit.node.name in mentioned
            if (
                helper
                or unit.binds & mentioned
                or (names and unit.words & names)
                or (managers and unit.words & managers)
                or (makers and unit.words & makers)
            ):
                unit.relevant = changed = True
                mentioned |= unit.words
    return frozenset(u.index for u in definitions if not u.relevant)


#: Names a method must use for the model to ask whether calling it makes the host wait:
#: ``synchronize``, or a blocking read of a tensor (``.cpu()``, ``.item()``, ``.tolist()``,
#: ``.numpy()``).
WAIT_NAMES = frozenset({"synchronize", "cpu", "item", "tolist", "numpy"})
_WAIT_WORD = re.compile(r"\b(?:synchronize|cpu|item|tolist|numpy)\b")


def instantiated(name: str, has_bases: bool, text: str) -> bool:
    """Does ``name(`` occur in ``text`` other than in its own ``class name(...):`` line? (One of
    the conditions of ``_Builder.summarise_methods``, asked the same way here.)"""
    return text.count(f"{name}(") > (1 if has_bases else 0)


def called_on_others(method: str, text: str) -> bool:
    """Is ``.method(`` called in ``text`` on something other than ``self`` (more often than
    ``self.method(``)? The other condition of ``_Builder.summarise_methods``, asked alike here."""
    return text.count(f".{method}(") > text.count(f"self.{method}(")


def _waiting_methods(unit: _Unit, text: str, lines: list[str]) -> frozenset[str]:
    """The methods of this class the model may take for ones that make the host wait when called
    on an instance (``_Builder.summarise_methods``): the file calls the class (``C(`` outside its
    ``class`` line), and each method has no decorator and a parameter, names ``synchronize`` or
    a blocking read (:data:`WAIT_NAMES`) and is called as ``.name(`` more often than as
    ``self.name(``."""
    node = unit.node
    if not _WAIT_WORD.search(unit.text) or not instantiated(
        node.name, bool(node.bases or node.keywords), text
    ):
        return frozenset()
    found = set()
    for method in node.body:
        if (
            isinstance(method, ast.FunctionDef)
            and not method.decorator_list
            and method.args.args
            and called_on_others(method.name, text)
        ):
            start, end = statement_extent(method)
            if any(_WAIT_WORD.search(line) for line in lines[start - 1 : end]):
                found.add(method.name)
    return frozenset(found)


def _is_context_manager(node: ast.stmt) -> bool:
    """``@contextmanager`` (``@contextlib.contextmanager``) on a plain function."""
    return isinstance(node, ast.FunctionDef) and any(
        (d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", None)) == "contextmanager"
        for d in node.decorator_list
    )


def blank(text: str, tree: ast.Module, dropped: frozenset[int]) -> str:
    """``text`` with each statement ``tree.body[i]`` (``i`` in ``dropped``) replaced by ``pass``
    on its first line and empty lines after it: line numbers and columns do not move."""
    lines = _split_lines(text)
    for index in dropped:
        start, end = statement_extent(tree.body[index])
        lines[start - 1] = "pass" + _ending(lines[start - 1])
        for number in range(start, end):
            lines[number] = _ending(lines[number])
    return "".join(lines)


def _split_lines(text: str) -> list[str]:
    lines = _LINE.findall(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _ending(line: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith(("\n", "\r")):
        return line[-1]
    return ""
