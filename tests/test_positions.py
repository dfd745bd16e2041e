"""Positions computed one statement at a time must equal libcst's whole-module positions.

``PositionIndex`` regenerates only the top-level statement (or, in a class, the class-body
statement) that holds a node, and places it where its code occurs in the parsed text. Checked here
against ``PositionProvider`` over the whole module for every node of the fixtures, of generated
programs with comments, decorators, nested classes and Windows line endings, of sliced texts, and of
texts where the same method occurs twice (which must fall back to the whole module).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from libcst.metadata import MetadataWrapper, PositionProvider

from synclint.cstwalk import parent_map, register
from synclint.engine import parse_module
from synclint.positions import PositionIndex
from synclint.slicing import Trigger, relevant_slice

ROOT = Path(__file__).resolve().parent.parent


def _expected(module: cst.Module) -> dict:
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def _check_every_node(text: str, parsed: str | None = None) -> PositionIndex:
    """Compare every node's span with libcst's; return the index (to ask how it got there)."""
    module = parse_module(parsed if parsed is not None else text)
    expected = _expected(module)
    register(module)
    index = PositionIndex(module, text, parsed)
    nodes = list(parent_map(module))
    assert nodes, "nothing to compare"
    for node in nodes:
        got = index.span(node)
        want = expected[node]
        assert (got.start.line, got.start.column) == (want.start.line, want.start.column + 1), (
            type(node).__name__,
            module.code_for_node(node)[:60],
        )
        assert (got.end.line, got.end.column) == (want.end.line, want.end.column + 1)
    return index


def _fixture_texts() -> list[tuple[str, str]]:
    out = []
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        try:
            ast.parse(text)
            cst.parse_module(text)
        except (SyntaxError, cst.ParserSyntaxError):
            continue  # SYN001 fixtures
        out.append((path.name, text))
    return out


def test_every_fixture_node_has_libcst_position():
    texts = _fixture_texts()
    assert len(texts) > 100
    for _, text in texts:
        _check_every_node(text)


SAMPLE = '''\
"""Module docstring."""
import torch  # a comment


# a comment before a decorated class
@decorator(
    "multi-line"
)
class Outer(Base):
    """Doc."""

    attribute = 1  # class-level statement

    # comment before a method
    @property
    def value(self):
        return self._value

    def method(self, x,
               y):  # continuation line
        text = """
a multi-line string
   with odd indentation"""
        if x:
            return torch.cuda.Stream()
        return (y +
            x)

    class Inner:
        def deep(self):
            with torch.cuda.stream(s):
                pass


def function(a, *, b=2):
    for item in a: print(item); continue
    return b
x = 1; y = 2
'''


def test_statements_are_placed_without_regenerating_the_module():
    index = _check_every_node(SAMPLE)
    assert not index._whole  # every unit was found in the text, once


def test_windows_line_endings():
    index = _check_every_node(SAMPLE.replace("\n", "\r\n"))
    assert not index._whole


def test_tab_indented_class_body():
    text = "class A:\n\tdef f(self):\n\t\tif self:\n\t\t\treturn 1\n\n\tdef g(self):\n\t\treturn 2\n"
    assert not _check_every_node(text)._whole


def test_repeated_code_falls_back_to_the_whole_module():
    method = "    def same(self):\n        return torch.cuda.current_stream()\n"
    text = f"class A:\n{method}\n\nclass B:\n{method}"
    module = parse_module(text)
    register(module)
    index = PositionIndex(module, text)
    second = module.body[1].body.body[0]  # B.same: its code occurs twice in the text
    assert index.span(second).start.line == 7
    assert index._whole
    _check_every_node(text)


def test_file_without_final_newline():
    _check_every_node("def f():\n    return 1\n\nx = f()")
    _check_every_node("class A:\n    def f(self):\n        return 1")


def test_sliced_text_keeps_positions():
    """Rules see the original text while libcst parsed a slice with blank runs: the blank lines
    the slice leaves become the next statement's leading lines, which the original lacks."""
    text = (
        "import torch\n\n\ndef unrelated():\n    a = 1\n    return a\n\n\n"
        "def stream_work(x):\n    s = torch.cuda.Stream()\n    with torch.cuda.stream(s):\n"
        "        y = x * 2\n    return y\n"
    )
    trigger = Trigger(("Stream",))
    sliced = relevant_slice(text, ast.parse(text), [(trigger, None)])
    assert sliced is not None and "a = 1" not in sliced
    index = _check_every_node(text, parsed=sliced)
    assert not index._whole


_PIECES = st.sampled_from(
    [
        "x = 1\n",
        "# comment\n",
        "\n",
        "@dec\n",
        "def f(self):\n    return 1\n",
        "    def m(self):\n        return self.x  # note\n",
        "    y = [\n        1,\n    2]\n",
        "    '''doc'''\n",
        "    pass\n",
        "class C:\n",
        "if x:\n    pass\nelse:\n    y = 2\n",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=14))
def test_generated_programs(pieces):
    text = "".join(pieces)
    try:
        ast.parse(text)
        cst.parse_module(text)
    except (SyntaxError, cst.ParserSyntaxError, ValueError):
        return  # not a program: nothing to compare
    if not parse_module(text).body:
        return  # comments only: no node to place
    _check_every_node(text)


@pytest.mark.parametrize("name, text", _fixture_texts()[:5])
def test_spans_asked_in_any_order(name, text):
    """A second unit's ranges must not disturb the first's (each keeps its own line shift)."""
    module = parse_module(text)
    register(module)
    expected = _expected(module)
    index = PositionIndex(module, text)
    nodes = list(parent_map(module))
    for node in reversed(nodes):
        want = expected[node]
        assert index.span(node).start.line == want.start.line


def _forced_statement_by_statement(monkeypatch) -> None:
    """Make every unit and the module count as too deep to regenerate in one piece (lines still
    are not), as a 700-deep ``elif`` chain is on Python 3.12 and later."""
    from synclint import positions

    real = positions._deeper_than

    def deeper_than(root: cst.CSTNode, limit: int) -> bool:
        return not isinstance(root, cst.SimpleStatementLine) or real(root, limit)

    monkeypatch.setattr(positions, "_deeper_than", deeper_than)


def _innermost_statement(node: cst.CSTNode, parents) -> cst.CSTNode | None:
    """The simple statement line, compound statement or (in a one-line suite, ``if x: a(); b()``)
    small statement holding ``node``."""
    current = node
    while current is not None and not (
        isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        or isinstance(parents.get(current), cst.SimpleStatementSuite)
    ):
        current = parents.get(current)
    return current


def _check_statement_by_statement(text: str) -> None:
    """Inside simple statement lines, every node keeps libcst's exact span; elsewhere (a compound
    statement's header, its parameters and decorators) it gets where that statement starts."""
    module = parse_module(text)
    expected = _expected(module)
    register(module)
    index = PositionIndex(module, text)
    parents = parent_map(module)
    for node in parents:
        got, want = index.span(node), expected[node]
        start = (want.start.line, want.start.column + 1)
        holder = _innermost_statement(node, parents)
        if isinstance(holder, cst.SimpleStatementLine):
            assert (got.start.line, got.start.column) == start, type(node).__name__
            assert (got.end.line, got.end.column) == (want.end.line, want.end.column + 1)
        else:
            header = expected[holder].start if holder is not None else want.start
            assert (got.start.line, got.start.column) == (header.line, header.column + 1)


def test_statement_by_statement_positions_on_fixtures(monkeypatch):
    _forced_statement_by_statement(monkeypatch)
    texts = _fixture_texts()
    assert len(texts) > 100
    for _, text in texts:
        _check_statement_by_statement(text)
    _check_statement_by_statement(SAMPLE)
    _check_statement_by_statement(SAMPLE.replace("\n", "\r\n"))


def _elif_chain(count: int) -> str:
    lines = ["import torch", "", "", "def dispatch(mode):", "    s = torch.cuda.Stream()"]
    lines.append("    x = torch.zeros(8, device='cuda')")
    for i in range(count):
        lines.append(f"    {'if' if i == 0 else 'elif'} mode == {i}:")
        lines += ["        with torch.cuda.stream(s):", f"            y{i} = x * {i}"]
    lines.append("    return x")
    return "\n".join(lines) + "\n"


def test_findings_deep_in_an_elif_chain_keep_exact_positions():
    """A 1,000-deep ``elif`` chain is regenerated one line at a time: each finding's span is
    still the code it points at (Python 3.12 and later cannot regenerate the chain whole)."""
    from synclint.engine import lint_source

    text = _elif_chain(1_000)
    found = [d for d in lint_source(text) if d.code == "SYN101"]
    assert len(found) == 1_000
    lines = text.splitlines()
    for finding in found:
        line = lines[finding.span.start.line - 1]
        code = line[finding.span.start.column - 1 : finding.span.end.column - 1]
        assert line.strip().startswith("y") and line.endswith(f"= {code}"), (line, code)
        assert finding.span.start.line == finding.span.end.line


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12+ cannot regenerate the chain whole")
def test_deep_chain_positions_match_regenerating_it_whole(monkeypatch):
    from synclint import positions
    from synclint.engine import lint_source

    text = _elif_chain(600)
    by_line = lint_source(text)
    monkeypatch.setattr(positions, "SAFE_DEPTH", 10**9)
    whole = lint_source(text)
    assert [(d.code, d.span) for d in by_line] == [(d.code, d.span) for d in whole]
