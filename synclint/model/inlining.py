"""Calls to methods of the same class, analysed at the call site.

Prefetchers, optimizers and pipeline stages split their stream logic over small methods:
``step()`` makes the side stream wait, calls ``self._update()`` which works on it, then joins it;
``forward()`` records an event and calls ``self._copy()`` which waits for it. Judged on its own,
each helper looks wrong; judged where it is called, it is right. So a ``self.m(...)`` call walks
``m``'s body right there, with the caller's state (current stream, clocks, events, attribute
values) and the arguments bound to the parameters. Depth is bounded and recursion is cut, so the
cost stays linear in practice. Private helpers that are called from the class are analysed only
this way (see :mod:`synclint.model.scopes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from synclint.model import api
from synclint.model.call_args import is_flag_parameter
from synclint.model.resolver import dotted
from synclint.model.state import join
from synclint.model.values import HOST, STORAGE_HOLDERS, Alternatives, storages_of

if TYPE_CHECKING:  # pragma: no cover
    from synclint.model.interpreter import Interpreter

_MISSING = object()

#: How many nested ``self.m()`` calls are walked into.
MAX_DEPTH = 2


def can_inline(
    interp: "Interpreter", name: str, functions: Optional[dict] = None, depth: int = MAX_DEPTH
) -> bool:
    """May the function ``name`` of ``functions`` (the class's methods unless given) be walked at
    its call site now? Not when it is already being walked (recursion) or the nesting is ``depth``
    deep."""
    table = interp.class_methods if functions is None else functions
    return name in table and name not in interp.inline_stack and len(interp.inline_stack) < depth


_PROPERTY_DECORATORS = frozenset({"property", "cached_property", "functools.cached_property"})


def simple_property(method: cst.FunctionDef) -> bool:
    """Is ``method`` a property whose body is one ``return <expr>`` (a docstring aside)?

    ``self.compute_stream`` of ``@property def compute_stream(self): return
    torch.cuda.current_stream()`` is that call at each use: such properties are walked where they
    are read, like private methods where they are called. Longer properties are left unknown
    (reading an attribute is frequent, and a long body is rarely a stream or a tensor)."""
    if not any(
        dotted(decorator.decorator) in _PROPERTY_DECORATORS for decorator in method.decorators
    ):
        return False
    body = method.body
    if type(body) is not cst.IndentedBlock:
        return False
    statements = list(body.body)
    if len(statements) == 2 and _is_docstring(statements[0]):
        statements = statements[1:]
    if len(statements) != 1 or type(statements[0]) is not cst.SimpleStatementLine:
        return False
    small = statements[0].body
    return len(small) == 1 and type(small[0]) is cst.Return and small[0].value is not None


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        type(statement) is cst.SimpleStatementLine
        and len(statement.body) == 1
        and type(statement.body[0]) is cst.Expr
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def property_value(method: cst.FunctionDef) -> Optional[cst.BaseExpression]:
    """The expression a :func:`simple_property` returns; None for any other method."""
    if not simple_property(method):
        return None
    statements = list(method.body.body)
    return statements[-1].body[0].value


def read_property(interp: "Interpreter", node: cst.Attribute):
    """The value of ``self.<name>`` when ``name`` is a :func:`simple_property` of the class
    (walked like an inlined call with no arguments); :data:`NOT_A_PROPERTY` otherwise."""
    name = node.attr.value
    method = interp.class_methods.get(name)
    if method is None or not can_inline(interp, name) or not simple_property(method):
        return NOT_A_PROPERTY
    return inline_call(interp, (), method)


#: What :func:`read_property` returns for an attribute that is no simple property.
NOT_A_PROPERTY = object()


class _HeldBy:
    """The ids of the storages some values refer to (the caller's, at an inlined call), computed
    on first use: most inlined methods end with no local storage to release, and then they are
    never needed."""

    __slots__ = ("_values", "_ids")

    def __init__(self, values: list) -> None:
        self._values = values
        self._ids: set[int] | None = None

    def __call__(self) -> set[int]:
        if self._ids is None:
            self._ids = {s.root.id for v in self._values for s in storages_of(v)}
            self._values = []
        return self._ids


def _scalar_annotation(param: cst.Param) -> bool:
    annotation = param.annotation.annotation if param.annotation is not None else None
    return type(annotation) is cst.Name and annotation.value in api.PYTHON_SCALARS


def call_values(interp: "Interpreter", args: Sequence[cst.Arg]) -> tuple[list, dict]:
    """The values of a call's positional and keyword arguments, evaluated in order."""
    exprs = interp.exprs
    positional = [exprs.ev(arg.value) for arg in args if arg.keyword is None and not arg.star]
    keywords = {arg.keyword.value: exprs.ev(arg.value) for arg in args if arg.keyword is not None}
    return positional, keywords


def inline_call(
    interp: "Interpreter",
    args: Sequence[cst.Arg],
    method: cst.FunctionDef,
    body: Optional[Sequence[cst.BaseStatement]] = None,
    release: bool = True,
    values: Optional[tuple[list, dict]] = None,
    keep_stream: bool = False,
    frame: Optional[dict] = None,
):
    """Walk ``method`` as called with ``args`` (a call's, or none for a property); return the
    value it returns (or None). ``body``: walk only these statements of it; ``values``: the
    arguments, already evaluated; ``release=False`` keeps its locals alive at the end (a
    generator's frame, :mod:`.context_managers`); ``keep_stream=True`` leaves the caller on the
    stream the walk ends on (an entry half that ends inside ``with torch.cuda.stream(s):``).
    ``frame``: the helper's own names, kept from one walk of it to the next (a generator's entry
    and exit halves share its frame): they start this walk, and its locals are left there."""
    exprs = interp.exprs
    positional, keywords = values if values is not None else call_values(interp, args)
    params = list(method.params.posonly_params) + list(method.params.params)
    if params and params[0].name.value in ("self", "cls"):
        params = params[1:]

    caller_env = interp.state.env
    held_by_caller = _HeldBy(list(caller_env.values()))
    env = {k: v for k, v in caller_env.items() if k.startswith(("self.", "cls."))}
    if frame:
        env.update(frame)
    names = set()
    # What the call writes out for each parameter, or its default: for a device argument
    # (`Calls.device_of`), which a value (a string is just a host value) does not tell.
    written = [a.value for a in args if a.keyword is None and not a.star]
    written_by_name = {a.keyword.value: a.value for a in args if a.keyword is not None}
    arguments: dict[str, cst.BaseExpression] = {}
    for index, param in enumerate(params + list(method.params.kwonly_params)):
        name = param.name.value
        names.add(name)
        if index < len(positional) and index < len(params):
            value = positional[index]
            if index < len(written):
                arguments[name] = written[index]
        elif name in keywords:
            value = keywords[name]
            if name in written_by_name:
                arguments[name] = written_by_name[name]
        elif param.default is not None:
            value = exprs.ev(param.default)
            arguments[name] = param.default
        else:
            value = None
        if value is not None and _scalar_annotation(param):
            value = HOST  # `begin_epoch: int`: a number, whatever the caller's value was taken for
        env[name] = value
    for star in (method.params.star_arg, method.params.star_kwarg):
        if type(star) is cst.Param:
            env[star.name.value] = None

    saved_params, saved_entry_op, saved_loop_base = interp.params, interp.entry_op, interp.loop_base
    saved_made_on, interp.made_on = interp.made_on, {}  # the helper's locals are its own
    interp.loop_base = interp.loop_depth
    caller_stream = interp.state.current
    interp.state.env = env
    for name, value in env.items():
        if value.__class__ not in STORAGE_HOLDERS:
            continue  # most attributes: skip the call (this loop runs for every inlined call)
        for storage in storages_of(value):
            storage.root.names.add(name)
    # Only parameters bound to something known stand for the caller's values; unknown ones (a
    # list built by a comprehension) are not "produced on the caller's stream".
    interp.params = {n for n in names if env.get(n) is not None}
    saved_flags = interp.flag_params
    interp.flag_params = saved_flags | {
        p.name.value for p in params + list(method.params.kwonly_params) if is_flag_parameter(p)
    }
    interp.inline_stack.append(method.name.value)
    interp.inline_returns.append([])
    interp.inline_keep.append(held_by_caller)
    interp.inline_arguments.append(arguments)
    try:
        if body is None:
            interp.suite(method.body)
        else:
            interp.run_block(body)
    finally:
        returns = interp.inline_returns.pop()
        interp.inline_keep.pop()
        interp.inline_arguments.pop()
        interp.inline_stack.pop()
        interp.params, interp.entry_op, interp.loop_base = saved_params, saved_entry_op, saved_loop_base
        interp.made_on = saved_made_on
        interp.flag_params = saved_flags

    ends = [state for state, _ in returns]
    if frame is not None and not interp.state.dead:
        frame.update((k, v) for k, v in interp.state.env.items() if not k.startswith(("self.", "cls.")))
    if not interp.state.dead:
        if release:
            interp.release_locals(method, keep_ids=held_by_caller)
        ends.append(interp.state)
    state = ends[0] if ends else interp.state
    for other in ends[1:]:
        state = join(state, other)
    # Back in the caller: its locals, plus whatever the helper did to attributes (most of them
    # are bound to what the caller had: only the others are looked at).
    merged = dict(caller_env)
    had = caller_env.get
    for key, value in [(k, v) for k, v in state.env.items() if had(k, _MISSING) is not v]:
        if key.startswith(("self.", "cls.")):
            merged[key] = value
    state.env = merged
    if not state.dead and not keep_stream:
        state.current = caller_stream  # a `return` inside `with stream(...)` leaves the block too
    interp.state = state

    values = [value for _, value in returns if value is not None]
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return Alternatives(tuple(values[:8]))


def return_from_inline(interp: "Interpreter", stmt: cst.Return) -> Optional[bool]:
    """Handle ``return`` inside an inlined helper: remember the state and value, end the path."""
    if not interp.inline_returns:
        return None
    value = interp.exprs.ev(stmt.value) if stmt.value is not None else None
    interp.release_locals(stmt, keep=storages_of(value), keep_ids=interp.inline_keep[-1])
    interp.inline_returns[-1].append((interp.state.copy(), value))
    interp.state.dead = True
    return True
