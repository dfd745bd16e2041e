"""A cheap resolver from names in the source to qualified PyTorch names.

libcst's ``QualifiedNameProvider`` builds full scope analysis for every node of every file; that was
most of Fixit's run time. synclint needs much less: which local names are bound by ``import``
statements, so that ``th.cuda.Stream``, ``from torch.cuda import stream as cs`` and DeepSpeed's
``get_accelerator().Stream()`` all resolve to one canonical name. Local variables holding a namespace
(``acc = get_accelerator()``) are handled by the interpreter, which binds them to a ``ModuleRef``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Iterator, Optional

import libcst as cst

#: Spellings that behave like ``torch.cuda`` for stream and event purposes.
_NAMESPACE_ALIASES = {
    "torch.xpu": "torch.cuda",
    "torch.accelerator": "torch.cuda",
    "torch.cuda.streams": "torch.cuda",
    "torch.mtia": "torch.cuda",
    # DeepSpeed's communication layer mirrors torch.distributed's API.
    "deepspeed.comm": "torch.distributed",
}
_NAME_ALIASES = {
    "torch.Stream": "torch.cuda.Stream",
    "torch.Event": "torch.cuda.Event",
    "torch.cuda.StreamContext": "torch.cuda.stream",
    "torch.cuda.set_stream": "torch.cuda.set_stream",
    "torch.cuda.current_device_stream": "torch.cuda.current_stream",
    "torch.cuda.graphs.graph": "torch.cuda.graph",
    "torch.cuda.graphs.Graph": "torch.cuda.Graph",
    "torch.cuda.CUDAGraph": "torch.cuda.CUDAGraph",
    "torch.cuda.get_stream": "torch.cuda.current_stream",
}


@lru_cache(maxsize=4096)
def canonical(qualname: str) -> str:
    """Map equivalent spellings onto one name (``torch.xpu.Stream`` -> ``torch.cuda.Stream``).
    Memoised: the model asks it some seventy thousand times on DeepSpeed, mostly the same names."""
    for prefix, target in _NAMESPACE_ALIASES.items():
        if qualname == prefix or qualname.startswith(prefix + "."):
            qualname = target + qualname[len(prefix):]
            break
    return _NAME_ALIASES.get(qualname, qualname)


def dotted(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` as text, or None when the expression is not a plain dotted name."""
    # Exact type tests (here and below): libcst's node classes are ABCs, so an isinstance() that
    # fails goes through ABCMeta in Python; these functions run a hundred thousand times a file.
    kind = type(node)
    if kind is cst.Name:
        return node.value
    if kind is cst.Attribute:
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def is_self_attribute(node: cst.CSTNode) -> bool:
    """``self.x``."""
    return type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self"


def without_not(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """``test`` stripped of its ``not``s, and whether there was an odd number of them."""
    negated = False
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, negated = test.expression, not negated
    return test, negated


def tested_set(test: cst.BaseExpression) -> Optional[str]:
    """The name or attribute a test asks to be set, dotted: ``s`` of ``s is not None`` or of
    ``s``; None for any other test."""
    if type(test) is cst.Comparison:
        if len(test.comparisons) != 1:
            return None
        comparison = test.comparisons[0]
        if not (
            type(comparison.operator) is cst.IsNot
            and type(comparison.comparator) is cst.Name
            and comparison.comparator.value == "None"
        ):
            return None
        test = test.left
    return dotted(test) if type(test) in (cst.Name, cst.Attribute) else None


def target_names(target: cst.BaseExpression) -> set:
    """The names a ``for`` target or an assignment's target binds (``i``, ``(k, v)``)."""
    if type(target) is cst.Name:
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in target_names(e.value)}
    return set()


def _module_name(node: cst.BaseExpression) -> str:
    name = dotted(node)
    return name or ""


def _concrete_subclasses(base: type) -> frozenset[type]:
    """Every class below ``base``: an exact-type test against them is an ``isinstance`` test
    against ``base`` without the abstract base class's (slow, Python-level) check."""
    found: set[type] = set()
    stack = [base]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return frozenset(found)


_SUITES = _concrete_subclasses(cst.BaseSuite)
_COMPOUND_STATEMENTS = _concrete_subclasses(cst.BaseCompoundStatement)


def nested_suites(stmt: cst.CSTNode) -> Iterator[cst.BaseSuite]:
    """The statement blocks directly inside a compound statement (bodies, else, except, finally)."""
    body = getattr(stmt, "body", None)
    if type(body) in _SUITES:
        yield body
    orelse = getattr(stmt, "orelse", None)
    while type(orelse) is cst.If:  # elif chains: iterate, they can be thousands long
        yield orelse.body
        orelse = orelse.orelse
    if orelse is not None and type(getattr(orelse, "body", None)) in _SUITES:
        yield orelse.body
    for handler in getattr(stmt, "handlers", ()) or ():
        yield handler.body
    final = getattr(stmt, "finalbody", None)
    if final is not None:
        yield final.body


def _statements(body: Iterable[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Every statement, at any depth (imports inside functions, ``if``/``try`` blocks count; so
    :mod:`synclint.slicing` keeps a function whose import names something relevant code uses)."""
    for stmt in body:
        yield stmt
        if type(stmt) in _COMPOUND_STATEMENTS:
            for suite in nested_suites(stmt):
                yield from _statements(suite.body)


class ImportResolver:
    def __init__(self, module: cst.Module, wrappers: Iterable[str] = ()) -> None:
        self.aliases: dict[str, str] = {}
        self.wrappers = {canonical(w) for w in wrappers}
        self.wrapper_tails = {w.rsplit(".", 1)[-1] for w in self.wrappers}
        for stmt in _statements(module.body):
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    kind = type(small)
                    if kind is cst.Import:
                        self._import(small)
                    elif kind is cst.ImportFrom:
                        self._import_from(small)

    def _import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _module_name(alias.name)
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                self.aliases[alias.asname.name.value] = full
            else:
                head = full.split(".", 1)[0]
                self.aliases.setdefault(head, head)

    def _import_from(self, node: cst.ImportFrom) -> None:
        if node.relative:
            base = "." * len(node.relative) + (_module_name(node.module) if node.module else "")
        else:
            base = _module_name(node.module) if node.module else ""
        if type(node.names) is cst.ImportStar:
            return
        for alias in node.names:
            name = _module_name(alias.name)
            local = name
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                local = alias.asname.name.value
            self.aliases[local] = f"{base}.{name}" if base else name

    def qualify(self, node: cst.BaseExpression) -> Optional[str]:
        """The canonical qualified name of a dotted expression, or None."""
        kind = type(node)
        if kind is cst.Name:
            return canonical(self.aliases.get(node.value, node.value))
        if kind is cst.Attribute:
            base = self.qualify(node.value)
            return canonical(f"{base}.{node.attr.value}") if base else None
        if type(node) is cst.Call and self.is_wrapper_call(node):
            return "torch.cuda"
        return None

    def is_wrapper_call(self, node: cst.Call) -> bool:
        """``get_accelerator()`` and other configured calls returning a torch.cuda-like object."""
        if node.args:
            return False
        name = self.qualify(node.func)
        if name is None:
            return False
        if name in self.wrappers:
            return True
        # Relative or re-exported imports: match on the last component when it was imported.
        return name.rsplit(".", 1)[-1] in self.wrapper_tails and "." in name
