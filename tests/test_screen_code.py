"""The screen's node code (:class:`synclint.screen.SourceCode`) is libcst's ``code_for_node``.

The model compares the code of nodes (conditions, slices, process groups) and some rules read it
before they decide, so on a mirrored tree the screen cuts that code from the source. Wherever it
gives an answer, the answer must be exactly libcst's, or a screened file could be passed that the
ordinary run would report. Each test pairs the nodes of a mirrored tree with those of libcst's parse
(the shapes are the same: ``tests/test_mirror.py``) and compares every answer.
"""

from __future__ import annotations

import ast
import multiprocessing
import sys
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_mirror import TRIVIA, _fields

from synclint.astscan import python_parse
from synclint.mirror import SourceText, Unsupported, mirror_module
from synclint.mirror_code import SourceCode

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT / "corpora"


def _children(node: cst.CSTNode) -> list:
    """The child nodes the mirror builds too, in field order (no whitespace, no punctuation)."""
    if isinstance(node, cst.FormattedString):
        return [p.expression for p in node.parts if isinstance(p, cst.FormattedStringExpression)]
    found = []
    for name in _fields(type(node)):
        value = getattr(node, name)
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, cst.CSTNode) and type(item) not in TRIVIA:
                found.append(item)
    return found


def answers(text: str) -> tuple[int, int, list[str]] | None:
    """(answered, refused, wrong answers) over every node of ``text``'s mirror that has an origin;
    None when the mirror or a parser does not take ``text``."""
    tree = python_parse(text, "<test>")[0]
    if tree is None:
        return None
    try:
        parsed = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError):
        return None
    source = SourceText(text, record_origins=True)
    try:
        mirrored = mirror_module(tree, text, (), source)
    except Unsupported:
        return None
    code = SourceCode(source, tree)
    answered = refused = 0
    wrong: list[str] = []
    stack = [(mirrored, parsed)]
    while stack:
        mine, theirs = stack.pop()
        if type(mine) is not type(theirs):  # pragma: no cover - test_mirror reports these
            wrong.append(f"shape: {type(mine).__name__} != {type(theirs).__name__}")
            continue
        if mine in code.origins:
            got = code.code(mine)
            if got is None:
                refused += 1
            else:
                answered += 1
                expected = parsed.code_for_node(theirs)
                if got != expected:
                    wrong.append(f"{type(theirs).__name__}: {got!r} != {expected!r}")
        a, b = _children(mine), _children(theirs)
        if len(a) != len(b):  # pragma: no cover
            wrong.append(f"children of {type(mine).__name__}: {len(a)} != {len(b)}")
            continue
        stack.extend(zip(a, b))
    return answered, refused, wrong


CASES = {
    "names_and_calls": "f(a, b=c)\nx.y(z)\nprint (x)\nobj[0](y)\nf(x)(y)\n",
    "parenthesised": "x = (a)\ny = ((a + b)) * c\nz = not (a)\nif (a): pass\nw = [(a), (b)]\n",
    "call_parentheses": "dist.all_reduce(t, group=group)\nf(g(x))\nclass A(B): pass\n",
    "grouping": (
        "assert (a\n        ), 'm'\nassert not (b and\n  c)\nx = ((d))\nf((e), k=(g))\n"
        "def h() -> (int): return (i)\nwith (j):\n    pass\nfor (k) in (l): del (m)\n"
        "n = lambda: (o)\np = {q: (r)}\ns[(t):(u), (v)]\nw = 'x'(y)\nz = a.b(c)\n"
    ),
    "keyword_before_parenthesis": "return_ = 1\nassert (x)\ndel (y)\nwhile (z): pass\nreturn_(x)\n",
    "comments": "f(  # one (\n    a,  # two\n)\nx = (  # three\n    b\n)\ny = (\n    # four\n    c)\n",
    "continuations": "x = a + \\\n    b\ny = (a \\\n  )\n",
    "subscripts": (
        "x[a , b]\nx[a,\n  # c\n  b]\nx[a ]\nx[:, 0:4]\nx[::2]\nx[(a), b]\nx[a, (b)]\n"
        "x[a,]\nx[(a, b)]\nx[(a):b]\nx[i + 1]\nx[\n    a:\n]\nx[a: , b]\n"
        + ("x[*a]\n" if sys.version_info >= (3, 11) else "")  # PEP 646
    ),
    "generators": "f(x for x in y)\nf((x for x in y))\ng(a, (x for x in y))\n",
    "strings": "x = 'a' 'b'\ny = ('a'\n     'b')\nz = f'{a!r:>{w}}' + rb'\\x'\n",
    "operators": "a if b else c\nlambda: (x)\n(x := 1)\nawait_ = [y async for y in z]\n",
    "unicode": "x = '日本語'[0:1]; café = naïve(x)\nif (café): pass\n",
    "decorators": "class A:\n    @mark(a, [\n        1,\n    ])\n    def f(self):\n        pass\n",
    "indented_multiline": (
        "class A:\n    def f(self):\n        x = g(\n            a,\n            # note\n\n"
        "            b,\n  c)\n        if (y and\n                z):\n            pass\n"
    ),
    "tabs": "def f():\n\tx = g(\n\t\ta,\n\t)\n\treturn x\n",
    "crlf_block": "def f():\r\n    return g(\r\n        a,\r\n    )\r\n",
    "crlf": "if (x):\r\n    y = (a +\r\n  b)\r\n",
    "black_slices": (
        "def f(x):\n    y = x[\n        a : b + 1\n    ]\n    z = x[\n        :, (c) : (d)\n  ]\n"
        "    w = x[\n        e:\n    ]\n    v = x[\n        f : g,\n        ]\n    u = x[h:  ]\n"
    ),
    "backslash_conditions": (
        "def f():\n    if a and b \\\n            and (c or\n        d):\n        pass\n"
        "    assert any(e\n               for e in x) is False or \\\n        y, 'm'\n"
        "    z = (g and  # h \\\n        i)\n    s = 'a\\\n  b' + t\n"
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases(name):
    result = answers(CASES[name])
    assert result is not None
    answered, _, wrong = result
    assert not wrong
    assert answered


def test_parentheses_and_refusals():
    """A node's own parentheses are part of its code, a call's are not; a generator in a call, a
    comment after a subscript's last element and a comment between ``(`` and the node get no
    answer (the file then takes the ordinary way)."""
    text = (
        "x = (a)\nf(y for y in z)\nv[b,]\nw = c\nassert (d\n        ), 'm'\ng(e)\nh((  # c\n  k))\n"
        "u[m,  # n\n]\n"
    )
    source = SourceText(text, record_origins=True)
    tree = ast.parse(text)
    module = mirror_module(tree, text, (), source)
    code = SourceCode(source, tree)
    lines = [line.body[0] for line in module.body]
    assert code.code(lines[0].value) == "(a)"
    assert code.code(lines[1].value.args[0].value) is None  # the generator
    assert code.code(lines[2].value.slice[0]) == "b,"  # the trailing comma is the element's
    assert code.code(lines[3].value) == "c"
    assert code.code(lines[4].test) == "(d\n        )"
    assert code.code(lines[5].value.args[0].value) == "e"
    assert code.code(lines[6].value.args[0].value) is None
    assert code.code(lines[7].value.slice[0]) is None  # `m,  # n`: whose is the comment?
    assert code.code(module.body[0]) is None  # a statement: never asked, never answered


def _code_of(text: str):
    source = SourceText(text, record_origins=True)
    tree = ast.parse(text)
    module = mirror_module(tree, text, (), source)
    return module, SourceCode(source, tree)


def test_multiline_slices_are_answered():
    """Formatters split long slices over lines: ``x[\\n    a : b\\n]``. The whitespace before
    ``]`` is the bracket's when the slice ends in an expression, so the element's code is its
    own text; after a slice's last colon or a trailing comma it is the element's, up to the
    bracket (less the block's indentation, as libcst prints it)."""
    text = (
        "def f(x):\n    y = x[\n        a : b\n    ]\n    z = x[\n        a :\n    ]\n"
        "    w = x[\n        a : b,\n    ]\n"
    )
    module, code = _code_of(text)
    body = module.body[0].body.body
    assert code.code(body[0].body[0].value.slice[0]) == "a : b"
    assert code.code(body[1].body[0].value.slice[0]) == "a :\n"
    assert code.code(body[2].body[0].value.slice[0]) == "a : b,\n"


def test_backslash_continuations_are_kept_as_written():
    """libcst drops the block's indentation after a line break inside brackets but keeps the
    line after a backslash continuation as written; a backslash that ends a comment is not a
    continuation, and is refused."""
    text = (
        "def f():\n    if a and b \\\n            and (c or\n        d):\n        pass\n"
        "    x = (g and  # h \\\n        i)\n"
    )
    module, code = _code_of(text)
    body = module.body[0].body.body
    assert code.code(body[0].test) == "a and b \\\n            and (c or\n    d)"
    assert code.code(body[1].body[0].value) is None


@pytest.mark.parametrize(
    "path",
    sorted(p for folder in ("fixtures", "examples") for p in (ROOT / folder).rglob("*.py")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_repository_files(path):
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        pytest.skip("not UTF-8")
    result = answers(text)
    if result is None:
        pytest.skip("not taken by a parser or the mirror")
    assert not result[2]


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(hypothesmith.from_node())
def test_generated_programs(text):
    result = answers(text)
    if result is not None:
        assert not result[2]


#: Whitespace between tokens as formatters and people write it: line breaks inside brackets,
#: backslash continuations, comments (a backslash ending one too), blank lines, tabs.
_GAPS = (
    "",
    " ",
    "  ",
    "\n",
    "\n    ",
    "\n        ",
    " \\\n",
    " \\\n  ",
    "\t",
    "\n\n    ",
    "  # c\n    ",
    "  # c \\\n    ",
)
_ATOMS = ("a", "x.y", "f(a)", "(a)", "(a + b)", "n // 2", "s[0]", "'s'", "1", "a[b:c]")


@st.composite
def _expressions(draw, depth=0):
    gap = st.sampled_from(_GAPS)
    kind = draw(st.integers(0, 4 if depth < 2 else 0))
    if kind <= 1:
        return draw(st.sampled_from(_ATOMS))
    if kind == 2:
        operator = draw(st.sampled_from(("+", "and", "*")))
        left, right = draw(_expressions(depth + 1)), draw(_expressions(depth + 1))
        return f"{left}{draw(gap)}{operator}{draw(gap)}{right}"
    if kind == 3:
        return f"({draw(gap)}{draw(_expressions(depth + 1))}{draw(gap)})"
    return f"x[{draw(_subscripts(depth + 1))}]"


@st.composite
def _subscripts(draw, depth=0):
    gap = st.sampled_from(_GAPS)
    optional = st.one_of(st.just(""), _expressions(depth + 1))
    elements = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            element = f"{draw(optional)}{draw(gap)}:{draw(gap)}{draw(optional)}"
            if draw(st.booleans()):
                element += f"{draw(gap)}:{draw(gap)}{draw(optional)}"
        else:
            element = draw(_expressions(depth + 1))
        elements.append(element)
    text = draw(gap) + f"{draw(gap)},{draw(gap)}".join(elements)
    if draw(st.booleans()):
        text += f"{draw(gap)},"
    return text + draw(gap)


@st.composite
def _formatted_programs(draw):
    lines = ["def g():"]
    for _ in range(3):
        value = f"x[{draw(_subscripts())}]"
        other = draw(_expressions())
        lines.append(
            draw(
                st.sampled_from(
                    (
                        f"    y = {value}",
                        f"    if {other} and {value}:\n        pass",
                        f"    assert {value} or \\\n        {other}, 'm'",
                        f"    f({value})",
                    )
                )
            )
        )
    return "\n".join(lines) + "\n"


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(_formatted_programs())
def test_formatted_subscripts_and_continuations(text):
    """Slices split over lines, trailing commas, backslashes and comments in every position: the
    cases where libcst's whitespace ownership decides an element's code."""
    result = answers(text)
    if result is not None:  # many draws are not valid Python (a comment before a backslash...)
        assert not result[2]


def _corpus_file(path: Path):
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
    except (UnicodeDecodeError, OSError):
        return None
    return answers(text)


@pytest.mark.slow
@pytest.mark.skipif(not CORPORA.is_dir(), reason="corpora/ not fetched")
def test_corpora():
    """Every answer on every corpus file is libcst's; most nodes get one."""
    paths = sorted(CORPORA.rglob("*.py"))
    context = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    with context.Pool() as pool:
        results = [r for r in pool.map(_corpus_file, paths, chunksize=8) if r is not None]
    answered = sum(r[0] for r in results)
    refused = sum(r[1] for r in results)
    wrong = [w for r in results for w in r[2]]
    print(f"\n{answered} answered, {refused} refused, {len(wrong)} wrong over {len(results)} files")
    assert not wrong, "\n".join(sorted(set(wrong), key=len)[:30])
    assert refused < answered / 10
