"""The fast walker must be indistinguishable from libcst's own ``visit`` for read-only visitors.

Checked three ways: the children of every node equal libcst's ``node.children`` (same objects, same
order) on the fixtures, a generated corpus and, when present, a sample of DeepSpeed; a recording
visitor sees the same calls in the same order; and every fixture lints to the same diagnostics
whether the rules walk with :func:`synclint.cstwalk.walk` or with libcst.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import libcst as cst
import pytest

from synclint import cstwalk
from synclint.engine import lint_source
from synclint.rules.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
DEEPSPEED = ROOT / "corpora" / "DeepSpeed"


def _generated(tmp_path_factory) -> list[Path]:
    spec = importlib.util.spec_from_file_location(
        "gen_corpus", ROOT / "benchmarks" / "gen_corpus.py"
    )
    gen = importlib.util.module_from_spec(spec)
    sys.modules["gen_corpus"] = gen
    spec.loader.exec_module(gen)
    out = tmp_path_factory.mktemp("walk-corpus")
    gen.generate(out, 4_000, stream_fraction=0.5, seed=3)
    return sorted(out.rglob("*.py"))


def _sources(tmp_path_factory) -> list[Path]:
    files = sorted((ROOT / "fixtures").rglob("*.py")) + _generated(tmp_path_factory)
    if DEEPSPEED.is_dir():
        sample = sorted(DEEPSPEED.rglob("*.py"))
        random.Random(0).shuffle(sample)
        files += sample[:30]
    return files


@pytest.fixture(scope="module")
def modules(tmp_path_factory) -> list[cst.Module]:
    parsed = []
    for path in _sources(tmp_path_factory):
        try:
            parsed.append(cst.parse_module(path.read_bytes()))
        except cst.ParserSyntaxError:
            continue  # the SYN001 fixtures
    return parsed


def test_children_match_libcst_on_real_code(modules):
    checked = 0
    for module in modules:
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            expected = node.children
            got = cstwalk.children_of(node)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), type(
                node
            )
            checked += 1
            stack.extend(expected)
    assert checked > 10_000


def test_non_trivia_children_skip_only_trivia_on_real_code(modules):
    """The index reads no field that libcst's annotations say holds only trivia: what it skips
    must really be nothing but trivia, on every node of real code."""
    skipped_fields = set()
    for module in modules:
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            expected = [c for c in node.children if c.__class__ not in cstwalk.TRIVIA]
            got = cstwalk.non_trivia_children(node)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), type(node)
            skipped_fields |= {(type(node).__name__, f) for f in cstwalk._trivia_fields(type(node))}
            stack.extend(node.children)
    # it does skip something: parentheses, whitespace, commas and operators
    assert {("BinaryOperation", "operator"), ("Call", "lpar"), ("Arg", "comma")} <= skipped_fields


class Recorder(cst.CSTVisitor):
    """Records every callback, prunes lambdas, and handles some punctuation (disables skipping)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def visit_Name(self, node):
        self.events.append(("Name", id(node)))

    def visit_Call(self, node):
        self.events.append(("Call", id(node)))

    def leave_Call(self, node):
        self.events.append(("/Call", id(node)))

    def visit_Lambda(self, node):
        self.events.append(("Lambda", id(node)))
        return False

    def leave_Lambda(self, node):
        self.events.append(("/Lambda", id(node)))


class CommaRecorder(Recorder):
    def visit_Comma(self, node):
        self.events.append(("Comma", id(node)))


class GenericRecorder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def on_visit(self, node):
        self.events.append(("in", id(node)))
        return not isinstance(node, cst.FunctionDef) or node.name.value != "skip_me"

    def on_leave(self, original_node):
        self.events.append(("out", id(original_node)))


@pytest.mark.parametrize("visitor_type", [Recorder, CommaRecorder, GenericRecorder])
def test_visitors_see_what_libcst_shows_them(modules, visitor_type):
    extra = cst.parse_module(
        "def skip_me():\n    f(lambda: g(1), 2)\n\ndef other(a, b=h(3)):\n    return a\n"
    )
    for module in [*modules, extra]:
        expected, got = visitor_type(), visitor_type()
        module.visit(expected)
        cstwalk.walk(module, got)
        assert got.events == expected.events


def test_attribute_hooks_fall_back_to_libcst():
    class AttributeHooks(cst.CSTVisitor):
        def __init__(self) -> None:
            self.seen = []

        def visit_Call_func(self, node):
            self.seen.append(node)

    visitor = AttributeHooks()
    cstwalk.walk(cst.parse_module("f(x)\n"), visitor)
    assert len(visitor.seen) == 1


def test_deep_nesting_does_not_exhaust_the_stack():
    source = "x = " + "(" * 150 + "1" + ")" * 150 + "\n"
    chain = "y = " + " + ".join(["a"] * 3_000) + "\n"
    for text in (source, chain):
        module = cst.parse_module(text)

        class Names(cst.CSTVisitor):
            count = 0

            def visit_Name(self, node):
                Names.count += 1

        cstwalk.walk(module, Names())
        assert Names.count >= 1
    assert len(cstwalk.parent_map(cst.parse_module(chain))) > 3_000


def test_parent_map_agrees_with_libcst_children(modules):
    for module in modules[:40]:
        parents = cstwalk.parent_map(module)
        for child, parent in parents.items():
            assert any(c is child for c in parent.children)


def test_fixtures_lint_identically_with_libcst_traversal(monkeypatch):
    codes = set(all_rules())
    fixtures = sorted((ROOT / "fixtures").rglob("*.py"))
    fast = {p: lint_source(p.read_text(), str(p), codes) for p in fixtures}
    monkeypatch.setattr(cstwalk, "_plan", lambda visitor_type: None)  # every walk through libcst
    slow = {p: lint_source(p.read_text(), str(p), codes) for p in fixtures}
    assert fast == slow
    assert sum(len(v) for v in fast.values()) > 20  # the fixtures do produce findings


def test_visitor_classes_made_per_call_leave_no_plans_behind():
    """Rules define visitor classes inside functions: a new class per call must not accumulate."""
    import gc

    module = cst.parse_module("f(x)\ng(y)\n")

    def count_calls() -> int:
        class Calls(cst.CSTVisitor):
            n = 0

            def visit_Call(self, node):
                Calls.n += 1

        cstwalk.walk(module, Calls())
        return Calls.n

    assert all(count_calls() == 2 for _ in range(200))
    gc.collect()
    assert len(cstwalk._PLANS) < 50


@pytest.mark.parametrize("visitor_type", [Recorder, GenericRecorder])
def test_indexed_walks_of_a_registered_file_and_its_parts_match_libcst(modules, visitor_type):
    """Once the engine registers a parsed file, walks of it and of any node inside it go through
    one shared index: the calls and their order must still be libcst's."""
    extra = cst.parse_module(
        "def skip_me():\n    f(lambda: g(1), 2)\n\ndef other(a, b=h(3)):\n    return a\n"
    )
    indexed = 0
    try:
        for module in [*modules[:60], extra]:
            cstwalk.register(module)
            parts = [module, *module.body[:5]]
            parts += [s.body for s in module.body if isinstance(s, (cst.ClassDef, cst.FunctionDef))][:5]
            for part in parts:
                expected, got = visitor_type(), visitor_type()
                part.visit(expected)
                cstwalk.walk(part, got)
                assert got.events == expected.events
            assert cstwalk._registered[1] is not None or visitor_type is GenericRecorder
            indexed += cstwalk._registered[1] is not None
    finally:
        cstwalk.register(None)
    assert visitor_type is GenericRecorder or indexed > 20


def test_indexed_parent_map_equals_the_walked_one(modules):
    try:
        for module in modules[:40]:
            cstwalk.register(None)
            walked = cstwalk.parent_map(module)
            cstwalk.register(module)
            assert cstwalk.parent_map(module) == walked
            for part in module.body[:3]:
                assert cstwalk.parent_map(part) == {
                    child: parent for child, parent in walked.items()
                    if child is not part and _inside(child, part, walked)
                }
        assert cstwalk._registered[1] is not None
    finally:
        cstwalk.register(None)


def _inside(node, ancestor, parents) -> bool:
    while node in parents:
        node = parents[node]
        if node is ancestor:
            return True
    return False


def test_depth_from_the_index_is_the_walked_depth():
    """``deeper_than`` reads depths off the registered index; a plain walk must agree, for every
    statement of every fixture and limits around its depth."""
    from synclint import positions
    from synclint.cstwalk import deeper_than, register

    def walked(root, limit):
        stack = [(root, 1)]
        while stack:
            node, depth = stack.pop()
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in cstwalk.non_trivia_children(node))
        return False

    checked = 0
    for path in sorted((ROOT / "fixtures").rglob("*.py"))[:120]:
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except cst.ParserSyntaxError:
            continue
        register(module)
        try:
            for statement in module.body:
                for limit in (1, 3, 6, 10, 20):
                    assert deeper_than(statement, limit) == walked(statement, limit), path.name
                    assert positions._deeper_than(statement, limit) == walked(statement, limit)
                    checked += 1
        finally:
            register(None)
    assert checked > 1000


def _reference_index(root: cst.CSTNode):
    """The index as a plain pre-order walk over :func:`cstwalk.non_trivia_children` gives it."""
    nodes, parents, ends = [], [], []

    def visit(node, parent):
        i = len(nodes)
        nodes.append(node)
        parents.append(parent)
        ends.append(None)
        for child in cstwalk.non_trivia_children(node):
            visit(child, i)
        ends[i] = len(nodes)

    visit(root, -1)
    return nodes, parents, ends


def test_tree_index_is_the_pre_order_of_the_non_trivia_children(modules):
    """The index is built by generated per-type code that pushes children without listing them:
    it must hold exactly the nodes a plain walk finds, in the same order, with the same parents,
    subtree ends and positions by type."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))  # the reference walk recurses
    try:
        _check_indexes(modules)
    finally:
        sys.setrecursionlimit(limit)


def _check_indexes(modules) -> None:
    for module in modules:
        index = cstwalk.TreeIndex(module)
        nodes, parents, ends = _reference_index(module)
        assert len(index.nodes) == len(nodes)
        assert all(a is b for a, b in zip(index.nodes, nodes))
        assert index.parents == parents
        assert index.ends == ends
        by_type: dict = {}
        for i, node in enumerate(nodes):
            by_type.setdefault(type(node), []).append(i)
        assert index.by_type() == by_type
        assert all(index.position[id(node)] == i for i, node in enumerate(nodes))


def test_visited_fields_from_bytecode_are_those_of_the_source():
    """The walker reads which fields libcst visits, and with which helper, from the bytecode of
    each node type's ``_visit_and_replace_children`` (cheap, no source file needed): for every
    node type it must be what the source says."""
    types: set[type] = set()
    stack = [cst.CSTNode]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in types:
                types.add(sub)
                stack.append(sub)
    checked = 0
    for node_type in types:
        if "_visit_and_replace_children" not in vars(node_type):
            continue
        from_source = cstwalk._visited_fields_from_source(node_type)
        assert cstwalk._visited_fields(node_type) == from_source, node_type.__name__
        checked += bool(from_source)
    assert checked > 150


def test_the_lint_path_never_walks_with_libcsts_copying_visit():
    """``node.visit(visitor)`` rebuilds the subtree it walks (libcst's visit is a transform), and on
    the screen's mirror it is no cheaper: a loop test's ``stmt.body.visit(...)`` once cost a cold
    run on DeepSpeed about 4% of its time. Read-only walks go through :func:`cstwalk.walk`; only
    ``cstwalk`` itself (its fallback) and the GPU ``confirm`` command may call ``.visit``."""
    import ast

    package = Path(cstwalk.__file__).resolve().parent
    allowed = {package / "cstwalk.py"}
    offenders = []
    for path in sorted(package.rglob("*.py")):
        if path in allowed or "confirm" in path.relative_to(package).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "visit"
                and len(node.args) == 1
            ):
                offenders.append(f"{path.relative_to(package)}:{node.lineno}")
    assert offenders == []
