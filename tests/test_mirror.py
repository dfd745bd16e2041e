"""``synclint.mirror`` builds from CPython's ``ast`` the tree libcst's parser would: the same node
types and fields, whitespace and punctuation aside. The tests compare the trees with :func:`shape`.
"""

from __future__ import annotations

import ast
import dataclasses
import multiprocessing
import sys
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings

from synclint.astscan import python_parse
from synclint.cstwalk import _all_subclasses
from synclint.mirror import Unsupported, mirror_module
from synclint.slicing import blank

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT / "corpora"


# --- the comparison -------------------------------------------------------------------------------


def _subclasses(*bases: type) -> set[type]:
    return _all_subclasses(bases)


#: Pure syntax trivia: any value of these types compares equal to any other (and to a sentinel).
TRIVIA = frozenset(
    _subclasses(cst.BaseParenthesizableWhitespace)
    | {
        cst.Newline,
        cst.Comment,
        cst.EmptyLine,
        cst.TrailingWhitespace,
        cst.Comma,
        cst.Colon,
        cst.Semicolon,
        cst.Dot,
        cst.LeftParen,
        cst.RightParen,
        cst.LeftSquareBracket,
        cst.RightSquareBracket,
        cst.LeftCurlyBrace,
        cst.RightCurlyBrace,
        cst.AssignEqual,
    }
)
IGNORED_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "header",
        "footer",
        "leading_lines",
        "lines_after_decorators",
        "default_indent",
        "default_newline",
        "encoding",
        "has_trailing_newline",
        "indent",
    }
)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in IGNORED_FIELDS and not f.name.startswith("whitespace")
        )
    return names


TRIVIAL = "~"


def shape(value):
    """A comparable form of a libcst tree: ``(type name, ((field, shape), ...))`` for a node,
    lists for sequences, ``"~"`` for trivia. f-strings keep only their expressions."""
    if isinstance(value, cst.CSTNode):
        cls = type(value)
        if cls in TRIVIA:
            return TRIVIAL
        if cls is cst.FormattedString:
            expressions = [
                shape(part.expression)
                for part in value.parts
                if isinstance(part, cst.FormattedStringExpression)
            ]
            return ("FormattedString", (("expressions", expressions),))
        return (cls.__name__, tuple((name, shape(getattr(value, name))) for name in _fields(cls)))
    if isinstance(value, (list, tuple)):
        return [shape(item) for item in value]
    if isinstance(value, cst.MaybeSentinel):
        return TRIVIAL
    return value


def first_difference(a, b, path: str = "module") -> str | None:
    """Where two shapes first differ, as a path of fields and indices, or None."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        if a[0] != b[0]:
            return f"{path}: {a[0]} != {b[0]}"
        for (name, x), (_, y) in zip(a[1], b[1]):
            found = first_difference(x, y, f"{path}.{name}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        return None
    if a != b:
        return f"{path}: {_brief(a)} != {_brief(b)}"
    return None


def _brief(value) -> str:
    text = repr(value[0] if isinstance(value, tuple) else value)
    return text if len(text) < 120 else text[:117] + "..."


def assert_same_shape(mirrored: cst.Module, parsed: cst.Module) -> None:
    a, b = shape(mirrored), shape(parsed)
    if a != b:
        pytest.fail(f"mirror != libcst at {first_difference(a, b)}")


# --- helpers --------------------------------------------------------------------------------------


def python_ast(text: str) -> ast.Module | None:
    return python_parse(text, "<test>")[0]


def libcst_parse(text: str) -> cst.Module | None:
    try:
        return cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError):
        return None


def pass_substituted(text: str, tree: ast.Module, dropped) -> str:
    """``text`` with each dropped top-level statement's lines replaced by ``pass`` and empty
    lines (from its first decorator on), as ``synclint.slicing`` does."""
    return blank(text, tree, frozenset(dropped))


def check(text: str, dropped=()) -> cst.Module:
    """Mirror ``text`` and compare with libcst's parse (of the pass-substituted text)."""
    tree = python_ast(text)
    assert tree is not None, "not valid Python"
    expected = libcst_parse(pass_substituted(text, tree, dropped) if dropped else text)
    assert expected is not None, "libcst rejects it"
    mirrored = mirror_module(tree, text, dropped)
    assert_same_shape(mirrored, expected)
    return mirrored


def check_or_unsupported(text: str) -> bool:
    """Like :func:`check` for text both parsers accept; False when the mirror raises Unsupported
    (True too when a parser rejects the text, which is then not a case)."""
    tree = python_ast(text)
    if tree is None:
        return True
    expected = libcst_parse(text)
    if expected is None:
        return True
    try:
        mirrored = mirror_module(tree, text)
    except Unsupported:
        return False
    assert_same_shape(mirrored, expected)
    return True


def read_source(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except (UnicodeDecodeError, OSError):
        return None


# --- files of the repository ----------------------------------------------------------------------

REPO_FILES = sorted(
    path
    for folder in ("fixtures", "examples", "benchmarks/triage")
    for path in (ROOT / folder).rglob("*.py")
)


@pytest.mark.parametrize("path", REPO_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_repository_files(path):
    text = read_source(path)
    if text is None or python_ast(text) is None or libcst_parse(text) is None:
        pytest.skip("not parsed by both")
    mirrored = check(text)
    mirrored.code_for_node(mirrored)  # regenerating code from a mirror tree works
    for statement in mirrored.body:
        mirrored.code_for_node(statement)


# --- hand-written snippets ------------------------------------------------------------------------

SNIPPETS = {
    "empty": "",
    "only_comments": "# one\n# two\n",
    "comment_no_newline": "# one",
    "no_final_newline": "x = 1\nif x:\n    y = 2",
    "crlf": "import os\r\nif x:\r\n    y = 1\r\nelse:\r\n    z = 2\r\n",
    "cr": "a = 1\rb = 2\r",
    "semicolons": "a = 1; b = 2\nc = 3;\nd = 4; e = 5;\nif x:\n    f(); g()\n",
    "semicolon_continuation": "a = 1; \\\n  b = 2\nc = 3 \\\n  ; d = 4\n",
    "one_line_suites": (
        "if x: return 1\nfor i in y: a; b\nwhile z: pass\nwith a: b\n"
        "class A: pass\ndef f(): return\ntry: a\nexcept E: b\nelse: c\nfinally: d\n"
    ),
    "suite_after_continuation": "if x: \\\n    y = 1\nif z:\n    w = 2\n",
    "elif_chain": (
        "if a:\n    x\nelif b:\n    y\nelif c: z\nelse:\n    w\n"
        "if a:\n    x\nelse:\n    if b:\n        y\n"
        "if a:\n    pass\nelse:\n    if b:\n        y\n    z\n"
    ),
    "decorators": (
        "@dec\n@dec.attr(1, k=2)\n@(lambda f: f)\ndef f():\n    pass\n"
        "@dataclass\nclass A(B, C, *extra, metaclass=M, **kw):\n    x: int = 0\n    y: str\n"
    ),
    "parameters": (
        "def f(a, b=1, /, c=2, *args, d, e=3, **kwargs) -> int: pass\n"
        "def g(a, /, *, b): pass\n"
        "def h(*, a=1): pass\n"
        "def i(a: int = 1, *args: str, b: 'x', **kw: float): pass\n"
        "def j(a, b, /): pass\n"
        "async def k(x=lambda: 0): await x\n"
    ),
    "lambdas": (
        "f = lambda: 0\ng = lambda a, b=1, *c, d, e=2, **f: a\nh = lambda a, /, b: a\n"
        "i = lambda *, a: a\nj = lambda *a, **k: (a, k)\n"
    ),
    "comprehensions": (
        "a = [x for x in y]\nb = {x for x in y if x if not x}\nc = {k: v for k, v in d.items()}\n"
        "d = (x for x in y)\ne = [x * y for x in a for y in b if x if y]\n"
        "f = [[z for z in row] for row in m]\ng = sum(x for x in y)\n"
        "h = f((x for x in y), 1)\n"
        "async def f():\n"
        "    return [x async for x in y], {x: 1 async for x in z}, [await x for x in y]\n"
    ),
    "fstrings": (
        "a = f'{x}'\nb = f\"{x!r:>{width}} and {y=} {z = !s} {{}} {w:.2f}\"\n"
        "c = f'a' 'b' f'{c}'\nd = rf'{x}\\n' F'''{y}\n{z['k']}'''\n"
        "e = f'{x:{y}.{z}}' f\"{'a' if x else 'b'}\"\nf = f'{a[1, 2]!a}{b[(1, 2)]}{0x10}'\n"
        "g = f'{ {1: 2}[1] }' f'{lambda_:=1}' f'{x!=y}' f'{x==y}'\n"
        "h = f'\\N{EM DASH} {x} \\{y}' rf'\\d{x}\\{y}' f'{x:#x}' f'{x:\"<10}' f'{x:{{}}}'\n"
    ),
    "implicit_concatenation": (
        "a = 'a' 'b'\nb = ('a'\n     'b'  # comment\n     \"c\")\nc = b'x' b'y'\n"
        "d = 'x' \\\n    'y'\ne = '''a''' \"\"\"b\"\"\"\n"
    ),
    "strings": (
        "a = r'\\d+'\nb = b'\\x00'\nc = u'x'\nd = Rb'\\'' \ne = 'it\\'s'\n"
        'f = """multi\nline"""\n'
        "g = '\\\\'\nh = BR'''x'''\n"
    ),
    "numbers": (
        "a = 1_000\nb = 0x_FF\nc = 1.5e-3\nd = 3j\ne = 0o17\nf = 0b1\ng = .5\nh = 1.\ni = -1\n"
    ),
    "constants": "a = None\nb = True\nc = False\nd = ...\ne = x[...]\n",
    "non_ascii": (
        "# -*- coding: utf-8 -*-\nnom = 'héllo'; été = \"ünï\" + f'{nom} é {été!r}'\n"
        "x = '日本語'[0:1]; y = 1.5\ndef café(naïve=1): return naïve\n"
    ),
    "starred": (
        "a, *b = c\n[*a, b] = c\nf(*a, *b, **c, **d)\nx = [*a, *b]\ny = {*a, *b}\n"
        "z = {**a, 'b': 1, **c}\nfor *a, b in c: pass\nw = *a, b\n"
        "u = f(a, x=1, *b)\nt = f(a, *b, x=1, *c, y=2, **d)\n"
    ),
    "starred_subscripts": "a = x[*b]\nc = x[*d, e]\nf = x[(*g, h)]\n",
    "walrus": "if (n := len(a)) > 10: pass\nx = [y for z in w if (y := f(z))]\n",
    "comparisons": (
        "a < b < c\na not in b\na is not b\na is b\na in b\na == b != c\n"
        "not a\n-a\n+a\n~a\nnot a in b\n"
    ),
    "boolean": "a and b and c\na or b and c\n(a or b) or c\na or (b or c)\n",
    "binary": (
        "a + b - c * d / e // f % g ** h @ i\na << b >> c | d & e ^ f\n"
        "a += 1\na -= 1\na *= 1\na /= 1\na //= 1\na %= 1\na **= 1\na @= 1\n"
        "a <<= 1\na >>= 1\na |= 1\na &= 1\na ^= 1\n"
    ),
    "subscripts": (
        "a[1]\na[1:2]\na[::2]\na[1:2:3]\na[:, 0]\na[1, 2]\na[(1, 2)]\na[(1), 2]\na[()]\n"
        "a[((1), 2)]\na[(1, 2), 3]\na[1,]\na[(1,)]\na[...,None]\n"
        "a[(  # c (\n  1), 2]\nDict[str, List[int]]\na[b][c]\n"
    ),
    "statements": (
        "del a\ndel a, b\ndel (a, b)\ndel a[0], b.c\nglobal a, b\n"
        "def f():\n    nonlocal_ = 1\n    def g():\n        nonlocal nonlocal_\n        global x\n"
        "assert x\nassert x, 'msg'\nraise\nraise E\nraise E from e\nx: int\ny: int = 1\n"
        "a.b: int\nreturn_ = 1\nwhile True:\n    break\nfor x in y:\n    continue\n"
        "x = y = z = 1\n"
    ),
    "imports": (
        "import a\nimport a.b.c as d, e\nfrom a import b\nfrom a.b import (c as d, e,)\n"
        "from . import x\nfrom .. import y\nfrom ...a import z\nfrom .... import w\n"
        "from .a.b import *\nfrom a import *\n"
    ),
    "try": (
        "try:\n    a\nexcept E as e:\n    b\nexcept (F, G):\n    c\nexcept:\n    d\n"
        "else:\n    e\nfinally:\n    f\n"
        "try:\n    a\nfinally:\n    b\n"
    ),
    "try_star": (
        "try:\n    a\nexcept* E as e:\n    b\nexcept* (F, G):\n    c\nelse:\n    d\n"
        "finally:\n    e\n"
    ),
    "async": (
        "async def f():\n    async with a as b, c:\n        pass\n"
        "    async for x in y:\n        pass\n    else:\n        pass\n"
        "    await g()\n    yield\n    yield x\n    return (yield from z)\n"
    ),
    "with": (
        "with a:\n    pass\nwith a as b, c as (d, e):\n    pass\nwith (a, b):\n    pass\n"
        "with (a as b, c):\n    pass\nwith (a, b) as c:\n    pass\nwith (yield):\n    pass\n"
    ),
    "loops": (
        "for i in range(3):\n    pass\nelse:\n    pass\nwhile x:\n    pass\nelse: y\n"
        "for x in a, b:\n    pass\n"
    ),
    "calls": (
        "f()\nf(a)\nf(a, b=1)\nf(x for x in y)\nf(a)(b)[c].d\nf(*a)\nf(**k)\nf(a, *b, c)\n"
        "obj.method(1, 2, key='v')\n"
    ),
    "expressions": (
        "a if b else c\n(a, b)\n()\n[a, b]\n{a, b}\n{}\n{a: b}\nx = (1,)\nawait_ = 1\n"
        "(yield_) = 1\nx = a.b.c\n"
    ),
    "classes": (
        "class A:\n    '''doc'''\n    x = 1\n    def f(self):\n        return self.x\n"
        "class B(A): pass\nclass C(): pass\nclass D(metaclass=M): pass\n"
    ),
    "nested_blocks": (
        "def f():\n    if a:\n        for b in c:\n            while d:\n                with e:\n"
        "                    try:\n                        pass\n                    except F:\n"
        "                        pass\n    return g\n"
    ),
    "comments_everywhere": (
        "# header\nx = 1  # trailing\n\n# before def\ndef f(  # params\n    a,  # a\n):\n"
        "    # body comment\n    return a  # ret\n# footer\n"
    ),
    "nfkc_identifiers": "ﬁle = 1\nµs = ﬁle.ﬁeld(ªrg=1)\nimport ﬁ.µ, x.ªòņၫYx\n",
    "form_feed": "x = 1\n\x0c\ndef f():\n    pass\n",
    "tabs": "if x:\n\ty = 1\n\tif z:\n\t\tw = 2\n",
    "docstring": '"""Module doc."""\nfrom __future__ import annotations\n',
    "backslash": "x = 1 + \\\n    2\nif a and \\\n   b:\n    pass\n",
}


#: Snippets of Python 3.11 syntax.
NEEDS_3_11 = frozenset({"starred_subscripts", "try_star"})


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippets(name):
    if name in NEEDS_3_11 and sys.version_info < (3, 11):
        pytest.skip("Python 3.11 syntax")
    mirrored = check(SNIPPETS[name])
    mirrored.code_for_node(mirrored)


#: f-strings as Python 3.12 reads them (PEP 701): any quotes, comments and nesting in fields.
PEP_701 = (
    'a = f"{x["a"]}" f"{"\\n".join(x)}" f"{f"{x}"}" f"{x:{"a"}}"\n'
    "b = f'''{\n  x  # comment\n}''' f'{x!r}' 'a' f'{y['k']:>{w}}'\n"
)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 701 f-strings need Python 3.12")
def test_pep_701_fstrings():
    check(PEP_701)


# --- dropped statements ---------------------------------------------------------------------------

DROPPING = """\
import torch

@decorator
@other.decorator(1)
def helper(x):
    return x + 1

class Kept:
    def method(self):
        return helper(1)

async def dropped_async():
    await thing()

@dataclass
class DroppedClass:
    x: int = 0

if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(
    "dropped", [(), (1,), (2,), (1, 3), (1, 2, 3, 4), (0, 5), (1, 4), range(6)], ids=repr
)
def test_dropped_statements(dropped):
    for text in (DROPPING, DROPPING.replace("\n", "\r\n")):
        mirrored = check(text, set(dropped))
        for i in dropped:
            line = mirrored.body[i]
            assert isinstance(line, cst.SimpleStatementLine)
            assert [type(s) for s in line.body] == [cst.Pass]


def test_dropped_statements_of_fixtures():
    """Drop every other top-level definition of each fixture."""
    for path in REPO_FILES:
        text = read_source(path)
        tree = python_ast(text) if text is not None else None
        if tree is None or libcst_parse(text) is None:
            continue
        definitions = [
            i
            for i, node in enumerate(tree.body)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
        check(text, set(definitions[::2]))


# --- unsupported constructs -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "match x:\n    case 1:\n        pass\n",
        pytest.param(
            "def f(*args: *Ts): pass\n",
            marks=pytest.mark.skipif(sys.version_info < (3, 11), reason="Python 3.11 syntax"),
        ),
        "ﬁle = 1\nfile = 2\n",  # ast reads both as "file" (NFKC); libcst keeps the spelling
    ],
)
def test_unsupported(text):
    tree = python_ast(text)
    assert tree is not None
    with pytest.raises(Unsupported):
        mirror_module(tree, text)


def test_exception_types_without_parentheses_are_unsupported():
    """``except A, B:`` (Python 3.14) is CPython's, not libcst's: the ordinary run must parse the
    file and report that it cannot. Simulated on older Pythons by moving the tuple's start."""
    text = "try:\n    pass\nexcept (A, B):\n    pass\n"
    tree = python_ast(text)
    mirror_module(tree, text)  # parenthesised: fine
    types = tree.body[0].handlers[0].type
    types.col_offset = types.elts[0].col_offset
    with pytest.raises(Unsupported):
        mirror_module(tree, text)


def test_deep_nesting_is_unsupported_or_right():
    text = "x = " + "(" * 150 + "1" + ")" * 150 + "\ny = " + " + ".join(["a"] * 3000) + "\n"
    assert check_or_unsupported(text) in (True, False)


# --- every field is set ---------------------------------------------------------------------------


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)  # AttributeError: an unset slot
            items = value if isinstance(value, (list, tuple)) else [value]
            stack.extend(item for item in items if isinstance(item, cst.CSTNode))


def test_every_field_is_set():
    seen: set[type] = set()
    for name, text in SNIPPETS.items():
        if name in NEEDS_3_11 and sys.version_info < (3, 11):
            continue
        mirrored = mirror_module(python_ast(text), text)
        seen |= {type(node) for node in _walk(mirrored)}
        mirrored.code_for_node(mirrored)
    for cls in (
        cst.Module, cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.IndentedBlock,
        cst.FunctionDef, cst.ClassDef, cst.Parameters, cst.Param, cst.ParamStar, cst.ParamSlash,
        cst.Lambda, cst.Decorator, cst.If, cst.Else, cst.For, cst.While, cst.Try, cst.TryStar,
        cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally, cst.With, cst.WithItem, cst.AsName,
        cst.Expr, cst.Assign, cst.AssignTarget, cst.AnnAssign, cst.Annotation, cst.AugAssign,
        cst.Return, cst.Raise, cst.From, cst.Assert, cst.Del, cst.Global, cst.Nonlocal,
        cst.NameItem, cst.Pass, cst.Break, cst.Continue, cst.Import, cst.ImportFrom,
        cst.ImportAlias, cst.ImportStar, cst.Name, cst.Attribute, cst.Call, cst.Arg,
        cst.Subscript, cst.SubscriptElement, cst.Index, cst.Slice, cst.BinaryOperation,
        cst.BooleanOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget,
        cst.IfExp, cst.NamedExpr, cst.Await, cst.Yield, cst.Tuple, cst.List, cst.Set, cst.Dict,
        cst.Element, cst.StarredElement, cst.DictElement, cst.StarredDictElement, cst.ListComp,
        cst.SetComp, cst.GeneratorExp, cst.DictComp, cst.CompFor, cst.CompIf, cst.Integer,
        cst.Float, cst.Imaginary, cst.Ellipsis, cst.SimpleString, cst.ConcatenatedString,
        cst.FormattedString, cst.FormattedStringText, cst.FormattedStringExpression,
        cst.Asynchronous, cst.Dot, cst.Add, cst.AddAssign, cst.In, cst.NotIn, cst.Not, cst.And,
    ):  # fmt: skip
        if sys.version_info < (3, 11) and cls in (cst.TryStar, cst.ExceptStarHandler):
            continue
        assert cls in seen, cls.__name__


# --- generated programs ---------------------------------------------------------------------------

#: hypothesmith's strategies are slow, and filter much of what they draw.
GENERATED_SLOWLY = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=100, deadline=None, suppress_health_check=GENERATED_SLOWLY)
@given(hypothesmith.from_grammar())
def test_grammar_generated_programs(text):
    check_or_unsupported(text)


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=50, deadline=None, suppress_health_check=GENERATED_SLOWLY)
@given(hypothesmith.from_node())  # slower to generate; it found what from_grammar had not
def test_node_generated_programs(text):
    check_or_unsupported(text)


# --- real projects --------------------------------------------------------------------------------


def _corpus_case(path: Path) -> tuple[str, str]:
    """("skip" | "same" | "unsupported" | "differs", detail) for one corpus file."""
    text = read_source(path)
    tree = python_ast(text) if text is not None else None
    expected = libcst_parse(text) if tree is not None else None
    if expected is None:
        return "skip", ""
    try:
        mirrored = mirror_module(tree, text)
    except Unsupported as reason:
        return "unsupported", str(reason)
    a, b = shape(mirrored), shape(expected)
    return ("same", "") if a == b else ("differs", str(first_difference(a, b)))


@pytest.mark.slow
@pytest.mark.skipif(not CORPORA.is_dir(), reason="corpora/ not fetched")
def test_corpora():
    """Every file of the fetched projects that both parsers accept: same shape, or Unsupported
    for well under 1% of them. (Over processes: libcst parses the two million lines slowly.)"""
    paths = sorted(CORPORA.rglob("*.py"))
    if "fork" in multiprocessing.get_all_start_methods():
        with multiprocessing.get_context("fork").Pool() as pool:
            outcomes = pool.map(_corpus_case, paths, chunksize=8)
    else:  # pragma: no cover
        outcomes = [_corpus_case(path) for path in paths]
    by_kind: dict[str, list[str]] = {}
    for path, (kind, detail) in zip(paths, outcomes):
        by_kind.setdefault(kind, []).append(f"{path.relative_to(CORPORA)}: {detail}")
    unsupported, differs = by_kind.get("unsupported", []), by_kind.get("differs", [])
    total = len(by_kind.get("same", [])) + len(unsupported) + len(differs)
    print(f"\n{len(unsupported)} of {total} corpus files Unsupported")
    print("\n".join("  " + line for line in unsupported))
    assert not differs, "mirror != libcst:\n" + "\n".join(differs[:20])
    assert total and len(unsupported) < total / 100
