"""A fast, read-only replacement for ``node.visit(visitor)`` with libcst ``CSTVisitor`` s.

Why: libcst's ``visit`` is written for transformers. For every node it calls
``_visit_and_replace_children``, which *rebuilds* the node (dataclass construction plus
validation) even when the visitor only reads, and fires ``on_visit_attribute`` and
``on_leave_attribute`` for every field. Profiling synclint on DeepSpeed showed a single traversal
costing about twice the parse, and the rules and model helpers traverse each file several times:
traversals, not parsing, were most of the run.

:func:`walk` gives a visitor exactly the ``on_visit``/``on_leave`` calls libcst would, in the same
order, without rebuilding anything:

* children come from the fields that libcst's own ``_visit_and_replace_children`` visits, in its
  order (read once per node type from libcst's source; a test checks them against ``node.children``
  on real code);
* subtrees made only of whitespace, comments and punctuation are skipped when the visitor has no
  handler for any such node type (with the default ``on_visit``/``on_leave``, skipping them is
  unobservable);
* visitors that use per-attribute hooks (``visit_Call_func``) or override ``on_visit_attribute``
  are handed to libcst unchanged;
* it is iterative, so deeply nested code cannot exhaust Python's recursion limit here.
"""

from __future__ import annotations

import dis
import inspect
import re
import typing
import weakref
from bisect import bisect_left
from collections.abc import Mapping
from functools import lru_cache
from itertools import chain
from typing import Callable, Iterator

import libcst as cst

_FIELD_IN_VISIT = re.compile(r"\b(visit_\w+)\(\s*self\s*,\s*\"(\w+)\"")
_SEQUENCE_HELPERS = frozenset(
    {"visit_sequence", "visit_iterable", "visit_body_sequence", "visit_body_iterable"}
)
_SINGLE_HELPERS = frozenset({"visit_required", "visit_optional", "visit_sentinel"})


def _all_subclasses(bases: tuple[type, ...]) -> set[type]:
    found: set[type] = set()
    stack = list(bases)
    while stack:
        cls = stack.pop()
        if cls not in found:
            found.add(cls)
            stack.extend(cls.__subclasses__())
    return found


#: Node types whose whole subtree is whitespace, comments or punctuation. (Found through
#: ``__subclasses__``: ``getattr`` over ``dir(libcst)`` would import libcst's lazy submodules.)
TRIVIA: frozenset[type] = frozenset(
    _all_subclasses(
        (
            cst.BaseParenthesizableWhitespace,
            cst.BaseBinaryOp,
            cst.BaseBooleanOp,
            cst.BaseCompOp,
            cst.BaseUnaryOp,
            cst.BaseAugOp,
        )
    )
    | {
        cst.TrailingWhitespace,
        cst.Newline,
        cst.Comment,
        cst.EmptyLine,
        cst.Semicolon,
        cst.Colon,
        cst.Comma,
        cst.Dot,
        cst.AssignEqual,
        cst.ImportStar,
        cst.LeftParen,
        cst.RightParen,
        cst.LeftSquareBracket,
        cst.RightSquareBracket,
        cst.LeftCurlyBrace,
        cst.RightCurlyBrace,
        cst.Asynchronous,
    }
)

_TRIVIA_OR_NOTHING = TRIVIA | {cst.MaybeSentinel, type(None)}

_FIELDS: dict[type, tuple[str, ...]] = {}
_GETTERS: dict[type, Callable[[cst.CSTNode], list[cst.CSTNode]]] = {}


@lru_cache(maxsize=None)
def _visited_fields(node_type: type) -> tuple[tuple[str, str], ...]:
    """(helper, field) pairs from libcst's ``_visit_and_replace_children`` for ``node_type``: each
    ``visit_required(self, "func", self.func, visitor)``, in order.

    Read from the method's bytecode (a helper's global, then the field's name as the first string
    constant after it), which is several times cheaper than its source and needs no ``.py``
    file; from the source when the bytecode shows none (a Python whose compiler spells it
    otherwise). Every worker process reads these for every node type it meets."""
    method = node_type._visit_and_replace_children
    pairs: list[tuple[str, str]] = []
    helper = None
    for instruction in dis.get_instructions(method):
        argument = instruction.argval
        if instruction.opname in _GLOBAL_LOADS and str(argument).startswith("visit_"):
            helper = argument
        elif helper is not None and instruction.opname == "LOAD_CONST" and type(argument) is str:
            pairs.append((helper, argument))
            helper = None
    return tuple(pairs) or _visited_fields_from_source(node_type)


_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})


def _visited_fields_from_source(node_type: type) -> tuple[tuple[str, str], ...]:
    """:func:`_visited_fields` read from the source of ``_visit_and_replace_children``."""
    return tuple(_FIELD_IN_VISIT.findall(inspect.getsource(node_type._visit_and_replace_children)))


def _field_helpers(node_type: type, skip: frozenset[str]) -> dict[str, set[str]]:
    """Each field libcst visits for ``node_type`` (but those in ``skip``), in its order, with the
    helpers that visit it (``visit_required``, ``visit_sequence``...): what a generated walker of
    the type reads, and whether as one node or as a sequence."""
    helpers: dict[str, set[str]] = {}
    for helper, name in _visited_fields(node_type):
        if name not in skip:
            helpers.setdefault(name, set()).add(helper)
    return helpers


def child_fields(node_type: type) -> tuple[str, ...]:
    """The names of the fields libcst visits for ``node_type``, in libcst's visiting order."""
    fields = _FIELDS.get(node_type)
    if fields is None:
        fields = _FIELDS[node_type] = tuple(dict.fromkeys(f for _, f in _visited_fields(node_type)))
    return fields


def _make_getter(
    node_type: type, skip: frozenset[str] = frozenset()
) -> Callable[[cst.CSTNode], list[cst.CSTNode]]:
    """Compile a function listing a node's children for one node type (leaving out the fields
    named in ``skip``).

    Generated code instead of a generic loop: the generic version spent most of its time in
    ``isinstance`` checks against libcst's abstract base classes."""
    lines = ["def children(node):", "    out = []"]
    for name, used in _field_helpers(node_type, skip).items():
        if used <= _SEQUENCE_HELPERS:
            lines.append(f"    v = node.{name}")
            lines.append("    if v: out.extend(v)")
        elif used <= _SINGLE_HELPERS:
            lines.append(f"    v = node.{name}")
            lines.append("    if v is not None and v.__class__ is not _Maybe: out.append(v)")
        else:  # the field is visited as a node or as a sequence depending on its value
            lines.append(f"    v = node.{name}")
            lines.append("    if isinstance(v, (tuple, list)): out.extend(v)")
            lines.append("    elif v is not None and v.__class__ is not _Maybe: out.append(v)")
    lines.append("    return out")
    namespace: dict = {"_Maybe": cst.MaybeSentinel}
    exec("\n".join(lines), namespace)  # noqa: S102 - code built from libcst's field names only
    return namespace["children"]


def children_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children of ``node`` in source order: ``node.children``, without its cost."""
    node_type = node.__class__
    getter = _GETTERS.get(node_type)
    if getter is None:
        getter = _GETTERS[node_type] = _make_getter(node_type)
    return getter(node)


_TRIVIA_FREE_GETTERS: dict[type, Callable[[cst.CSTNode], list[cst.CSTNode]]] = {}


@lru_cache(maxsize=None)
def _trivia_fields(node_type: type) -> frozenset[str]:
    """The fields of ``node_type`` that, by libcst's type annotations, can only hold trivia
    (whitespace, punctuation, operators): ``lpar``, ``whitespace_after``, ``comma``... Nothing
    when the annotations cannot be read."""
    try:
        hints = typing.get_type_hints(node_type)
    except Exception:  # noqa: BLE001 - an annotation libcst changed: list every field
        return frozenset()
    return frozenset(
        name for _, name in _visited_fields(node_type)
        if name in hints and _admitted(hints[name]) <= _TRIVIA_OR_NOTHING
    )


def _admitted(annotation) -> set:
    """The classes a field annotation admits (``Sequence[X]``, ``Union[X, Y]``: X and Y, with
    their subclasses); ``object`` for anything else."""
    arguments = typing.get_args(annotation)
    if arguments:
        return set().union(*(_admitted(argument) for argument in arguments))
    if isinstance(annotation, type):
        return _all_subclasses((annotation,))
    return {object}


def _trivia_free_getter(node_type: type) -> Callable[[cst.CSTNode], list[cst.CSTNode]]:
    """A getter like :func:`children_of`'s that does not read the fields holding only trivia
    (nearly half of what ``children_of`` lists on real code); made once per node type."""
    getter = _TRIVIA_FREE_GETTERS.get(node_type)
    if getter is None:
        getter = _TRIVIA_FREE_GETTERS[node_type] = _make_getter(node_type, _trivia_fields(node_type))
    return getter


def non_trivia_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """:func:`children_of` without the trivia."""
    return [c for c in _trivia_free_getter(node.__class__)(node) if c.__class__ not in TRIVIA]


def iter_children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    return iter(children_of(node))


def _children_reversed(node: cst.CSTNode, skip: frozenset[type]) -> list[cst.CSTNode]:
    out = [child for child in children_of(node) if child.__class__ not in skip]
    out.reverse()
    return out


_ATTRIBUTE_HOOK = re.compile(r"^(visit|leave)_[A-Z][A-Za-z]*_\w+$")
_VISITOR_BASES = frozenset(cst.CSTVisitor.__mro__)
_TRIVIA_NAMES = frozenset(t.__name__ for t in TRIVIA)
_Handlers = tuple[Callable | None, Callable | None]


class _Plan:
    """How to walk with one visitor class, read from the class's own methods.

    Plans are kept in a weak dictionary: rules define visitor classes inside functions, so a new
    class appears on every call, and a plan must cost little to build and nothing to keep. (It holds
    no handler: a handler may refer to its class, and the class would never be freed.)"""

    __slots__ = ("libcst_only", "default_dispatch", "skip", "handled")

    def __init__(self, visitor_type: type) -> None:
        base = cst.CSTVisitor
        self.skip: frozenset[type] = frozenset()
        self.default_dispatch = False
        self.libcst_only = True
        self.handled: frozenset[str] = frozenset()  # node type names with a visit_ or leave_
        if not issubclass(visitor_type, base):
            return
        names = {
            name
            for klass in visitor_type.__mro__
            if klass not in _VISITOR_BASES
            for name in vars(klass)
            if name.startswith(("visit_", "leave_"))
        }
        own = {name for name in names if _overrides(visitor_type, name)}
        if (
            visitor_type.on_visit_attribute is not base.on_visit_attribute
            or visitor_type.on_leave_attribute is not base.on_leave_attribute
            or any(_ATTRIBUTE_HOOK.match(name) for name in own)
        ):
            return  # per-attribute hooks: only libcst's own traversal calls them
        self.libcst_only = False
        self.handled = frozenset(name.split("_", 1)[1] for name in own)
        self.default_dispatch = (
            visitor_type.on_visit is base.on_visit and visitor_type.on_leave is base.on_leave
        )
        handles_trivia = any(name.split("_", 1)[1] in _TRIVIA_NAMES for name in own)
        if self.default_dispatch and not handles_trivia:
            self.skip = TRIVIA


_PLANS: "weakref.WeakKeyDictionary[type, _Plan]" = weakref.WeakKeyDictionary()


def _plan(visitor_type: type) -> _Plan | None:
    """The walking plan for ``visitor_type``, or None when libcst must do the walk."""
    plan = _PLANS.get(visitor_type)
    if plan is None:
        plan = _PLANS[visitor_type] = _Plan(visitor_type)
    return None if plan.libcst_only else plan


def _overrides(visitor_type: type, name: str) -> bool:
    mine = getattr(visitor_type, name, None)
    return mine is not None and mine is not getattr(cst.CSTVisitor, name, None)


def _handlers(handlers: dict, visitor_type: type, node_type: type) -> _Handlers:
    found = handlers.get(node_type)
    if found is None:
        name = node_type.__name__
        visit, leave = f"visit_{name}", f"leave_{name}"
        found = handlers[node_type] = (
            getattr(visitor_type, visit) if _overrides(visitor_type, visit) else None,
            getattr(visitor_type, leave) if _overrides(visitor_type, leave) else None,
        )
    return found


_SKIP_SINGLE = TRIVIA | {cst.MaybeSentinel, type(None)}
_PUSHERS: dict[type, Callable[[cst.CSTNode, int, Callable], None]] = {}


def _make_pusher(node_type: type) -> Callable[[cst.CSTNode, int, Callable], None]:
    """Compile ``push_children(node, i, push)`` for one node type: it pushes ``(child, i)`` for
    each non-trivia child of ``node``, the last one first (so that popping them gives libcst's
    visiting order). What :func:`non_trivia_children` lists, without building the list: the index
    calls this once for every node of every screened file."""
    lines = ["def push_children(node, i, push):"]
    for name, used in reversed(list(_field_helpers(node_type, _trivia_fields(node_type)).items())):
        lines.append(f"    v = node.{name}")
        sequence = ["for c in reversed(v):", "    if c.__class__ not in trivia: push((c, i))"]
        if used <= _SEQUENCE_HELPERS:
            lines += ["    if v:", *(f"        {line}" for line in sequence)]
        elif used <= _SINGLE_HELPERS:
            lines.append("    if v.__class__ not in skip: push((v, i))")
        else:  # a node or a sequence, depending on its value
            lines += ["    if isinstance(v, (tuple, list)):", *(f"        {line}" for line in sequence)]
            lines.append("    elif v.__class__ not in skip: push((v, i))")
    if len(lines) == 1:
        lines.append("    pass")
    namespace: dict = {"trivia": TRIVIA, "skip": _SKIP_SINGLE}
    exec("\n".join(lines), namespace)  # noqa: S102 - code built from libcst's field names only
    return namespace["push_children"]


class TreeIndex:
    """A parsed file's non-trivia nodes in libcst's visiting order, each with its parent and the end
    of its subtree, built once and shared by every later walk of the file or any part of it.

    Why: the rules and the model walk the same file many times (imports, calls, classes, each
    function's bindings, parents for positions); listing a node's children is most of a walk's cost,
    and here it is paid once. A walk then looks only at the positions of the node types its visitor
    handles (:meth:`by_type`), within its subtree's slice of the list."""

    __slots__ = ("nodes", "ends", "parents", "position", "_by_type")

    def __init__(self, root: cst.CSTNode) -> None:
        nodes: list[cst.CSTNode] = []
        parents: list[int] = []
        by_type: dict[type, list[int]] = {}
        stack: list = [(root, -1)]
        pop, push = stack.pop, stack.append
        add_node, add_parent, pushers = nodes.append, parents.append, _PUSHERS
        i = 0
        while stack:  # runs for every node of every screened file: kept to the bone
            node, parent = pop()
            add_node(node)
            add_parent(parent)
            node_type = node.__class__
            positions = by_type.get(node_type)
            if positions is None:
                by_type[node_type] = [i]
            else:
                positions.append(i)
            pusher = pushers.get(node_type)
            if pusher is None:
                pusher = pushers[node_type] = _make_pusher(node_type)
            pusher(node, i, push)
            i += 1
        # A subtree is contiguous in pre-order: it ends where its size says. Sizes add up from
        # the last node back, since every node comes after its parent.
        sizes = [1] * len(nodes)
        for j in range(len(nodes) - 1, 0, -1):
            sizes[parents[j]] += sizes[j]
        self.nodes, self.parents = nodes, parents
        self.ends = [j + size for j, size in enumerate(sizes)]
        # Keyed by id(): libcst nodes hash in Python, and the index keeps every node alive.
        self.position: dict[int, int] = dict(zip(map(id, nodes), range(len(nodes))))
        self._by_type = by_type

    def by_type(self) -> dict[type, list[int]]:
        """The positions of each node type, ascending (gathered while the index is built)."""
        return self._by_type


#: The file being analysed: registered by the engine after parsing, indexed on the first walk.
_registered: list = [None, None]  # [root, TreeIndex | None]


def register(root: cst.CSTNode) -> None:
    """Let walks of ``root`` and of its parts share one :class:`TreeIndex` (built when first
    needed; the previous file's index is dropped)."""
    _registered[0], _registered[1] = root, None


def _locate(node: cst.CSTNode) -> tuple[TreeIndex, int] | None:
    root, index = _registered
    if root is None:
        return None
    if index is None:
        index = _registered[1] = TreeIndex(root)
    i = index.position.get(id(node))
    return None if i is None else (index, i)


def source_order(node: cst.CSTNode) -> int | None:
    """Where ``node`` comes in the registered file's pre-order, which is the order of the source:
    of two nodes, the one that starts first, or the enclosing one, has the smaller number. None
    when no file is registered or ``node`` is not in it."""
    located = _locate(node)
    return None if located is None else located[1]


def deeper_than(node: cst.CSTNode, limit: int) -> bool | None:
    """Is ``node``'s subtree (non-trivia nodes) more than ``limit`` levels deep? Read off the
    registered file's index in one pass over the subtree's slice; None when ``node`` is not in it."""
    located = _locate(node)
    if located is None:
        return None
    index, start = located
    parents = index.parents
    depths = [1] * (index.ends[start] - start)
    for offset in range(1, len(depths)):
        depth = depths[parents[start + offset] - start] + 1
        if depth > limit:
            return True
        depths[offset] = depth
    return False


class _Names(cst.CSTVisitor):
    # At module level: a class made inside a function is cyclic garbage (tests/test_garbage.py).
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Name(self, name: cst.Name) -> None:
        self.found.add(name.value)


def names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier in ``node``'s subtree: names, and the names of attributes (``x.sync``
    gives ``x`` and ``sync``)."""
    visitor = _Names()
    walk(node, visitor)
    return visitor.found


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Visit ``node`` and its subtree with a read-only ``visitor`` as ``node.visit`` would."""
    plan = _plan(type(visitor))
    if plan is None:
        node.visit(visitor)
    elif plan.default_dispatch:
        located = _locate(node) if plan.skip is TRIVIA else None
        if located is not None:
            _walk_indexed(located[0], located[1], visitor, plan.handled)
        else:
            _walk_dispatching(node, visitor, plan)
    else:
        _walk_generic(node, visitor)


def _walk_indexed(
    index: TreeIndex, start: int, visitor: cst.CSTVisitor, handled: frozenset[str]
) -> None:
    """:func:`_walk_dispatching` over an index: the same calls in the same order.

    Only the nodes of the types the visitor handles are looked at (most visitors handle two or
    three of libcst's hundred node types): their positions, merged in pre-order, are where
    anything happens; a node's ``leave`` is due before the first position past its subtree."""
    visitor_type = type(visitor)
    nodes, ends = index.nodes, index.ends
    stop = ends[start]
    handlers: dict[type, _Handlers] = {}
    runs: list[list[int]] = []
    for node_type, positions in index.by_type().items():
        if node_type.__name__ not in handled:
            continue
        _handlers(handlers, visitor_type, node_type)  # fills handlers[node_type]
        low = bisect_left(positions, start)
        high = bisect_left(positions, stop, low)
        if low < high:
            runs.append(positions[low:high])
    order = runs[0] if len(runs) == 1 else sorted(chain.from_iterable(runs))
    leaving: list = []  # (end of subtree, leave handler, node), innermost last
    skip_until = -1
    for i in order:
        if i < skip_until:
            continue  # inside a subtree whose visit returned False
        while leaving and leaving[-1][0] <= i:
            _, on_leave, done = leaving.pop()
            on_leave(visitor, done)
        node = nodes[i]
        on_visit, on_leave = handlers[node.__class__]
        if on_leave is not None:
            leaving.append((ends[i], on_leave, node))
        if on_visit is not None and on_visit(visitor, node) is False:
            skip_until = ends[i]
    while leaving:
        _, on_leave, done = leaving.pop()
        on_leave(visitor, done)


def _walk_dispatching(root: cst.CSTNode, visitor: cst.CSTVisitor, plan: _Plan) -> None:
    visitor_type, skip = type(visitor), plan.skip
    handlers: dict[type, _Handlers] = {}  # per walk: see _Plan
    stack: list = [root]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        item = pop()
        if type(item) is tuple:  # (leave handler, node)
            item[0](visitor, item[1])
            continue
        found = handlers.get(type(item))
        if found is None:
            found = _handlers(handlers, visitor_type, type(item))
        on_visit, on_leave = found
        if on_leave is not None:
            push((on_leave, item))
        if on_visit is None or on_visit(visitor, item) is not False:
            extend(_children_reversed(item, skip))


def _walk_generic(root: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """For visitors overriding ``on_visit``/``on_leave``: every node, libcst's order."""
    stack: list = [root]
    pop, push, extend = stack.pop, stack.append, stack.extend
    on_visit, on_leave = visitor.on_visit, visitor.on_leave
    while stack:
        item = pop()
        if type(item) is tuple:
            on_leave(item[0])
            continue
        push((item,))
        if on_visit(item):
            extend(_children_reversed(item, frozenset()))


class IndexedParents(Mapping):
    """The parents of the nodes under one node of a :class:`TreeIndex`, read from the index.

    Why not a dict: building one costs a pass over every node of the file, and libcst nodes hash
    in Python, so each insertion and each look-up calls back into Python. The index already has
    every parent; a look-up here is one dictionary probe by ``id``."""

    __slots__ = ("_index", "_start", "_end")

    def __init__(self, index: TreeIndex, start: int) -> None:
        self._index, self._start, self._end = index, start, index.ends[start]

    def get(self, node, default=None):
        i = self._index.position.get(id(node))
        if i is None or not self._start < i < self._end:
            return default
        return self._index.nodes[self._index.parents[i]]

    def __getitem__(self, node: cst.CSTNode) -> cst.CSTNode:
        parent = self.get(node, _ABSENT)
        if parent is _ABSENT:
            raise KeyError(node)
        return parent

    def __contains__(self, node: object) -> bool:
        return self.get(node, _ABSENT) is not _ABSENT

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._index.nodes[self._start + 1 : self._end])

    def __len__(self) -> int:
        return self._end - self._start - 1


_ABSENT = object()


def parent_map(root: cst.CSTNode) -> Mapping[cst.CSTNode, cst.CSTNode]:
    """Each node's parent, for every node under ``root`` except whitespace and punctuation."""
    located = _locate(root)
    if located is not None:
        return IndexedParents(*located)
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in non_trivia_children(node):
            parents[child] = node
            stack.append(child)
    return parents
