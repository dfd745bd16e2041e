"""Where a value came from: the assignments that may have bound a name, attribute or container.

The event and transfer rules ask questions such as "was the event ``self.start`` created with
``enable_timing=True``?" or "is ``staging`` a pinned buffer?". The answer lives in an assignment that
may be far from the use: in ``__init__``, in a list comprehension of events, in a tuple unpacking, in
a ``for s, e in zip(starts, ends)`` loop. This module collects those bindings per scope (without flow
sensitivity: every assignment in the scope counts) and resolves an expression to the value
expressions that may have produced it. Rules stay precise by treating "some binding unknown" as
"don't know": only when *every* origin is understood do they conclude anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterable, Iterator, Mapping

import libcst as cst

from synclint.cstwalk import parent_map, walk

_MAX_DEPTH = 12


@dataclass(frozen=True)
class ElementOf:
    """A stand-in value: "an element of ``container``" (loop variables, subscripts)."""

    container: cst.BaseExpression


@dataclass(frozen=True)
class ReturnOf:
    """A stand-in value: "what ``function`` returns"."""

    function: cst.FunctionDef


Value = cst.BaseExpression | ElementOf | ReturnOf


class Unknown(Exception):
    """Raised inside resolution when an origin cannot be understood."""


def key_of(node: cst.BaseExpression, self_name: str | None = None) -> str | None:
    """A binding key: ``x``, ``self.x`` (any first-parameter name is spelled ``self``), ``x.y``."""
    if type(node) is cst.Name:
        if self_name is not None and node.value == self_name:
            return "self"
        return node.value
    if type(node) is cst.Attribute:
        base = key_of(node.value, self_name)
        return f"{base}.{node.attr.value}" if base else None
    return None


class _BindingCollector(cst.CSTVisitor):
    """Bindings made directly in one scope (not in nested functions or classes)."""

    def __init__(self, root: cst.CSTNode, self_name: str | None) -> None:
        self.root = root
        self.self_name = self_name
        self.bindings: dict[str, list[Value]] = {}
        self.functions: dict[str, cst.FunctionDef] = {}

    def _bind(self, target: cst.BaseExpression, value: Value) -> None:
        if type(target) in (cst.Tuple, cst.List):
            elements = [e.value for e in target.elements]
            values = _unpack(value, len(elements))
            for element, element_value in zip(elements, values):
                self._bind(element, element_value)
            return
        if type(target) is cst.Subscript:
            key = key_of(target.value, self.self_name)
            if key:
                self.bindings.setdefault(key + "[]", []).append(value)
            return
        key = key_of(target, self.self_name)
        if key:
            self.bindings.setdefault(key, []).append(value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node is self.root:
            return True
        self.functions.setdefault(node.name.value, node)
        self.bindings.setdefault(node.name.value, []).append(ReturnOf(node))
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return node is self.root

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        key = key_of(node.target, self.self_name)
        if key:
            self.bindings.setdefault(key, []).append(node.value)  # unknown shape: stays opaque

    def visit_For(self, node: cst.For) -> None:
        self._bind_loop(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_loop(node.target, node.iter)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name, node.item)

    def _bind_loop(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        if (
            isinstance(target, (cst.Tuple, cst.List))
            and type(iterable) is cst.Call
            and type(iterable.func) is cst.Name
            and iterable.func.value == "zip"
        ):
            for element, arg in zip([e.value for e in target.elements], iterable.args):
                self._bind(element, ElementOf(arg.value))
            return
        if (
            isinstance(target, (cst.Tuple, cst.List))
            and type(iterable) is cst.Call
            and type(iterable.func) is cst.Name
            and iterable.func.value == "enumerate"
            and len(target.elements) == 2
            and iterable.args
        ):
            self._bind(target.elements[1].value, ElementOf(iterable.args[0].value))
            return
        self._bind(target, ElementOf(iterable))

    def visit_Call(self, node: cst.Call) -> None:
        # ``xs.append(v)`` / ``xs.insert(i, v)`` put ``v`` into the container ``xs``.
        func = node.func
        if (
            type(func) is cst.Attribute
            and func.attr.value in {"append", "insert"}
            and node.args
        ):
            key = key_of(func.value, self.self_name)
            if key:
                self.bindings.setdefault(key + "[]", []).append(node.args[-1].value)


def _unpack(value: Value, count: int) -> list[Value]:
    if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == count:
        if not any(type(e) is cst.StarredElement for e in value.elements):
            return [e.value for e in value.elements]
    if isinstance(value, cst.BaseExpression):
        return [ElementOf(value)] * count
    return [value] * count


class Scope:
    """The bindings of one function, class (its ``self.`` attributes across methods) or module."""

    def __init__(self, node: cst.CSTNode, self_name: str | None = None) -> None:
        self.node = node
        self.self_name = self_name
        collector = _BindingCollector(node, self_name)
        walk(node, collector)
        self.bindings = collector.bindings
        self.functions = collector.functions

    @cached_property
    def shared(self) -> frozenset[str]:
        """Names the scope, or a function nested in it, declares ``global`` or ``nonlocal``: code
        outside the scope's own bindings may set them (``nonlocal found`` in a callback)."""
        collector = _SharedNames()
        walk(self.node, collector)
        return frozenset(collector.names)

    @cached_property
    def parameters(self) -> frozenset[str]:
        if type(self.node) is not cst.FunctionDef:
            return frozenset()
        params = self.node.params
        names = [
            p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        ]
        for star in (params.star_arg, params.star_kwarg):
            if type(star) is cst.Param:
                names.append(star.name.value)
        return frozenset(names)


def first_parameter(function: cst.FunctionDef) -> str | None:
    params = (*function.params.posonly_params, *function.params.params)
    return params[0].name.value if params else None


class Bindings:
    """Resolves expressions to their possible origins, from any node's point of view."""

    def __init__(self, module: cst.Module, parent: Callable[[cst.CSTNode], cst.CSTNode | None]):
        self.module = module
        self.parent = parent
        self._scopes: dict[int, Scope] = {}

    def _scope(self, node: cst.CSTNode, self_name: str | None = None) -> Scope:
        scope = self._scopes.get(id(node))
        if scope is None:
            scope = self._scopes[id(node)] = Scope(node, self_name)
        return scope

    def enclosing(self, node: cst.CSTNode) -> tuple[cst.FunctionDef | None, cst.ClassDef | None]:
        """The innermost function holding ``node`` and the class that function is a method of."""
        function = None
        current = self.parent(node)
        while current is not None:
            if type(current) is cst.FunctionDef and function is None:
                function = current
            elif type(current) is cst.ClassDef:
                return function, current if function is not None else None
            current = self.parent(current)
        return function, None

    def class_scope(self, cls: cst.ClassDef) -> Scope:
        """``self.x`` bindings of every method (and class-body attributes) of ``cls``."""
        scope = self._scopes.get(id(cls))
        if scope is None:
            scope = self._scopes[id(cls)] = Scope(cls)
            merged: dict[str, list[Value]] = {}
            for key, values in scope.bindings.items():  # class body: ``start = Event()``
                merged.setdefault(f"self.{key}", []).extend(values)
                merged.setdefault(key, []).extend(values)
            for stmt in cls.body.body:
                if type(stmt) is cst.FunctionDef:
                    method = self._scope(stmt, first_parameter(stmt))
                    for key, values in method.bindings.items():
                        if key.startswith("self.") or key.startswith("self[]"):
                            merged.setdefault(key, []).extend(values)
                    merged.setdefault(f"self.{stmt.name.value}", []).append(ReturnOf(stmt))
            scope.bindings = merged
        return scope

    def origins(self, expr: Value, at: cst.CSTNode) -> list[cst.BaseExpression]:
        """The leaf expressions (calls, literals, comprehensions' elements) ``expr`` may have come
        from, seen from ``at``. Raises :class:`Unknown` when some origin cannot be followed
        (a parameter, a call to an unknown function, a global from another module)."""
        return list(self._origins(expr, at, 0))

    def _origins(self, expr: Value, at: cst.CSTNode, depth: int) -> Iterator[cst.BaseExpression]:
        if depth > _MAX_DEPTH:
            raise Unknown
        if isinstance(expr, ReturnOf):
            yield from self._returns(expr.function, depth)
            return
        if isinstance(expr, ElementOf):
            yield from self._elements(expr.container, at, depth)
            return
        if type(expr) is cst.IfExp:
            yield from self._origins(expr.body, at, depth + 1)
            yield from self._origins(expr.orelse, at, depth + 1)
            return
        if type(expr) is cst.Subscript:
            if _is_slice(expr):
                yield from self._origins(expr.value, at, depth + 1)
            else:
                yield from self._elements(expr.value, at, depth)
            return
        if isinstance(expr, (cst.Name, cst.Attribute)):
            values = self.lookup(expr, at)
            if values is None:
                yield expr  # an imported or builtin name: a leaf the caller may understand
                return
            for value in values:
                yield from self._origins(value, at, depth + 1)
            return
        yield expr

    def _elements(
        self, container: Value, at: cst.CSTNode, depth: int
    ) -> Iterator[cst.BaseExpression]:
        if depth > _MAX_DEPTH:
            raise Unknown
        if isinstance(container, cst.BaseExpression):
            if isinstance(container, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
                yield from self._origins(container.elt, container.elt, depth + 1)
                return
            if type(container) is cst.DictComp:
                yield from self._origins(container.value, container.value, depth + 1)
                return
            if isinstance(container, (cst.List, cst.Tuple, cst.Set)):
                if not container.elements:
                    return
                for element in container.elements:
                    if type(element) is cst.StarredElement:
                        yield from self._elements(element.value, at, depth + 1)
                    else:
                        yield from self._origins(element.value, at, depth + 1)
                return
            if type(container) is cst.Dict:
                for element in container.elements:
                    if type(element) is cst.DictElement:
                        yield from self._origins(element.value, at, depth + 1)
                    else:
                        raise Unknown
                return
            if type(container) is cst.BinaryOperation and isinstance(
                container.operator, cst.Multiply
            ):
                for side in (container.left, container.right):
                    if isinstance(side, (cst.List, cst.Tuple)):
                        yield from self._elements(side, at, depth + 1)
                        return
                raise Unknown
            if type(container) is cst.Call and type(container.func) is cst.Name:
                if container.func.value in {"list", "tuple", "reversed", "iter"} and container.args:
                    yield from self._elements(container.args[0].value, at, depth + 1)
                    return
            if isinstance(container, (cst.Name, cst.Attribute)):
                found = False
                try:
                    key_values = self.lookup(container, at, suffix="[]")
                except Unknown:
                    key_values = None
                for value in key_values or ():
                    found = True
                    yield from self._origins(value, at, depth + 1)
                values = self.lookup(container, at)
                for value in values or ():
                    found = True
                    yield from self._elements(value, at, depth + 1)
                if not found:
                    raise Unknown
                return
            if type(container) is cst.Subscript and _is_slice(container):
                yield from self._elements(container.value, at, depth + 1)
                return
            if type(container) is cst.Subscript:
                for inner in self._elements(container.value, at, depth + 1):
                    yield from self._elements(inner, at, depth + 1)
                return
        if isinstance(container, ElementOf):
            for inner in self._elements(container.container, at, depth + 1):
                yield from self._elements(inner, at, depth + 1)
            return
        raise Unknown

    def call_results(self, call: cst.Call, at: cst.CSTNode) -> list[cst.BaseExpression]:
        """What a call to a function or method defined in this file may return (its returns'
        origins). Raises :class:`Unknown` for any other callee."""
        values = (
            self.lookup(call.func, at) if isinstance(call.func, (cst.Name, cst.Attribute)) else None
        )
        if not values or not all(isinstance(v, ReturnOf) for v in values):
            raise Unknown
        return [leaf for v in values for leaf in self._returns(v.function, 0)]

    def _returns(self, function: cst.FunctionDef, depth: int) -> Iterator[cst.BaseExpression]:
        collector = _ReturnCollector(function)
        walk(function, collector)
        if not collector.values:
            raise Unknown
        for value in collector.values:
            yield from self._origins(value, value, depth + 1)

    def lookup(
        self, expr: cst.BaseExpression, at: cst.CSTNode, suffix: str = ""
    ) -> list[Value] | None:
        """The values bound to ``expr`` (plus ``suffix``) in the scopes visible from ``at``.

        Returns None for a name bound nowhere in this file (an import, a builtin); raises
        :class:`Unknown` for a function parameter.
        """
        function, cls = self.enclosing(at)
        self_name = first_parameter(function) if function is not None and cls is not None else None
        key = key_of(expr, self_name)
        if key is None:
            raise Unknown
        key += suffix
        if key.startswith("self.") or key.startswith("self["):
            if cls is None:
                raise Unknown
            values = self.class_scope(cls).bindings.get(key)
            if values is None:
                raise Unknown
            return values
        # Closures: walk out through enclosing functions to the module.
        scope_node: cst.CSTNode | None = function
        while scope_node is not None:
            fn_self = (
                first_parameter(scope_node) if scope_node is function and cls is not None else None
            )
            scope = self._scope(scope_node, fn_self)
            head = key.split(".")[0].split("[")[0]
            if key in scope.bindings:
                return scope.bindings[key]
            if head in scope.parameters or head in scope.bindings:
                raise Unknown  # bound here, but not this attribute/element: a parameter or object
            scope_node, _ = self.enclosing(scope_node)
        module_scope = self._scope(self.module)
        if key in module_scope.bindings:
            return module_scope.bindings[key]
        head = key.split(".")[0].split("[")[0]
        if head in module_scope.bindings:
            raise Unknown
        return None


def _is_slice(node: cst.Subscript) -> bool:
    return any(type(element.slice) is cst.Slice for element in node.slice)


def returned_values(function: cst.FunctionDef) -> list[cst.BaseExpression] | None:
    """What ``function``'s ``return`` statements give back (not those of nested functions); None
    when one returns nothing."""
    collector = _ReturnCollector(function)
    try:
        walk(function, collector)
    except Unknown:
        return None
    return collector.values


class _SharedNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Global(self, node: cst.Global) -> None:
        self.names.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.names.update(item.name.value for item in node.names)


class _ReturnCollector(cst.CSTVisitor):
    def __init__(self, root: cst.FunctionDef) -> None:
        self.root = root
        self.values: list[cst.BaseExpression] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.root

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is None:
            raise Unknown
        self.values.append(node.value)


class _Calls(cst.CSTVisitor):
    # At module level, like every visitor here: a class made inside a function is freed only by
    # the cyclic collector, and would hold what its methods' closures hold (trees) until then.
    def __init__(self) -> None:
        self.found: list[cst.Call] = []

    def visit_Call(self, call: cst.Call) -> None:
        self.found.append(call)


def iter_calls(node: cst.CSTNode) -> Iterable[cst.Call]:
    """Every call inside ``node``, in source order."""
    calls = _Calls()
    walk(node, calls)
    return calls.found


def build_parent_map(module: cst.Module) -> Mapping[cst.CSTNode, cst.CSTNode]:
    return parent_map(module)
