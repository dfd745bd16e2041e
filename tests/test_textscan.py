"""The text scan behind SYN302's ``text_check`` is a necessary condition for its syntax check.

:func:`synclint.textscan.may_be_bare_call` may say False only where CPython's tree holds no bare
``<expr>.name(...)`` statement: checked on hand-written cases, on generated statements in every
context a call can stand in, and on real code (the standard library, with method names that are
called bare everywhere, and the fetched projects when present). A file it rules out is not parsed
at all when no other rule needs it: the last tests check that, and that results do not change.
"""

from __future__ import annotations

import ast
import re
import sysconfig
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import find, given
from hypothesis import strategies as st
from test_prefilter_differential import GENERATED, assert_generated_same

from synclint import pipeline
from synclint.astscan import has_bare_method_call, iter_statements, python_parse
from synclint.pipeline import FileSettings, lint_text
from synclint.rules._common import method_pattern
from synclint.rules.syn302_discarded_transfer_result import TRANSFER_ATTRIBUTE, TRANSFERS
from synclint.textscan import may_be_bare_call

ROOT = Path(__file__).resolve().parent.parent


def scan(text: str) -> bool:
    return may_be_bare_call(text, TRANSFER_ATTRIBUTE)


def bare_in_tree(text: str) -> bool:
    return has_bare_method_call(ast.parse(text), TRANSFERS)


@pytest.mark.parametrize(
    "text",
    [
        "x.to(d)\n",
        "if c:\n    self.buf.cuda()\n",
        "torch.zeros(4).to(d, non_blocking=True)\n",
        "(x.to(d))\n",
        "((x).cpu())\n",
        "if c: x.cpu()\n",
        "a = 1; x.cuda()\n",
        "x .to (d)\n",
        "x. to(d)\n",
        "batch[0].pin_memory()\n",
        "f (a) [0] .to(d)\n",
        "x.to(d)  # move it\n",
        "x.to(\n    d,\n)\n",
        "torch.cat([a,\n           b]).to(d)\n",
        "x \\\n    .to(d)\n",
        "(x.\n # moved\n cuda())\n",
        "(x.to)(d)\n",
        "'abc'.to(d)\n",
    ],
)
def test_bare_calls_are_candidates(text):
    assert bare_in_tree(text)
    assert scan(text)


@pytest.mark.parametrize(
    "text",
    [
        "y = x.to(d)\n",
        "f(x.to(d))\n",
        "return_value = [x.cuda() for x in xs]\n",
        "def f(x):\n    return x.cpu()\n",
        "s = torch.cuda.Stream()\n",
        "torch.cuda.synchronize()\n",
        "x.to(d).float()\n",
        "x.to(d), y\n",
        "y: torch.Tensor = x.cuda()\n",
        "await_value = x.cuda() + 1\n",
        "@x.to(d)\ndef g(): pass\n",
        "z = x.to(d) if c else y.cuda()\n",
        "model.to_empty(device=d)\n",
        "print(x.cpu())\n",
    ],
)
def test_calls_inside_expressions_are_ruled_out(text):
    assert not bare_in_tree(text)
    assert not scan(text)


# -- generated statements: every context a transfer call can stand in -----------------------------

RECEIVERS = st.sampled_from(
    ["x", "self.buf", "batch[0]", "torch.zeros(4)", "f(a)(b)", "(a + b)", "x [0]", "t.detach ()"]
)
DOTS = st.sampled_from([".", " .", ". ", " . ", ".\\\n    "])
CALLS = st.sampled_from(["to(d)", "cuda()", "cpu ()", "pin_memory()", "to(\n    d,\n)", "cuda"])
CONTEXTS = st.sampled_from(
    [
        "{}",
        "({})",
        "y = {}",
        "y: T = {}",
        "f({})",
        "f(a, {})",
        "[{}]",
        "return {}",
        "await {}",
        "if c: {}",
        "for i in r: {}",
        "a = 1; {}",
        "{}; a = 1",
        "{}.float()",
        "{}[0]",
        "{} + 1",
        "{}, 2",
        "not {}",
        "{} if c else None",
        "del {}",
        "assert {}",
        "lambda: {}",
        "print({}) ; {}",
        "yield {}",
        "(y := {})",
        "x = [\n    {},\n]",
        "f(\n    {}\n)",
        "{}  # a comment",
        "'''a\n'''; {}",
    ]
)


@st.composite
def statements(draw) -> str:
    lines = ["async def g(x, a, b, c, d, r, f, t, self, batch, T):"]
    for _ in range(draw(st.integers(1, 4))):
        call = f"{draw(RECEIVERS)}{draw(DOTS)}{draw(CALLS)}"
        context = draw(CONTEXTS)
        statement = context.replace("{}", call)
        lines.append("    " + statement.replace("\n", "\n    "))
    return "\n".join(lines) + "\n"


def _parses(text: str) -> bool:
    """Is ``text`` Python? Compiled, not only parsed: ``return x`` beside a ``yield`` in an
    ``async def`` parses, but is an error."""
    try:
        compile(text, "generated.py", "exec")
    except SyntaxError:
        return False
    return True


@GENERATED
@given(statements())
def test_generated_statements_never_ruled_out_wrongly(text):
    if not _parses(text):
        return  # `del f(x)`, `yield` in an async function: not Python, nothing to compare
    if bare_in_tree(text):
        assert scan(text), text


def test_statement_generator_makes_both_answers():
    """Guard against a vacuous property: the generator makes programs with bare calls, and
    programs the scan rules out."""
    assert bare_in_tree(find(statements(), lambda t: _parses(t) and bare_in_tree(t)))
    assert not scan(find(statements(), lambda t: _parses(t) and not scan(t)))


# -- real code ------------------------------------------------------------------------------------

#: Methods called bare all over any code base: the scan meets every statement shape real code has.
COMMON = ("append", "update", "extend", "write", "close", "pop", "add", "sort", "clear", "join")
COMMON_ATTRIBUTE = re.compile(method_pattern(*COMMON))


def _check_real_files(paths) -> tuple[int, int]:
    """(bare call statements seen, files the scan ruled out); fails on any wrong answer."""
    sites = ruled_out = 0
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        tree = python_parse(text, str(path))[0]
        if tree is None:
            continue
        lines = text.split("\n")  # Python's lines: a form feed is no line break
        lines = [line + "\n" for line in lines[:-1]] + lines[-1:]
        for node in iter_statements(tree):
            value = getattr(node, "value", None)
            if (
                type(node) is ast.Expr
                and type(value) is ast.Call
                and type(value.func) is ast.Attribute
                and value.func.attr in COMMON
            ):
                sites += 1
                own = "".join(lines[node.lineno - 1 : node.end_lineno])
                assert may_be_bare_call(own, COMMON_ATTRIBUTE), (path, node.lineno)
        if has_bare_method_call(tree, frozenset(COMMON)):
            assert may_be_bare_call(text, COMMON_ATTRIBUTE), path
        elif not may_be_bare_call(text, COMMON_ATTRIBUTE):
            ruled_out += 1
    return sites, ruled_out


#: The fetched projects (``corpora/``, ignored by git) a text scan is also checked on.
PROJECTS = ("DeepSpeed", "vllm", "Megatron-LM", "torchrec", "apex")


def stdlib_sample() -> list[Path]:
    """Part of the standard library, on every machine: its top level and the ``email`` package."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return sorted(stdlib.glob("*.py")) + sorted((stdlib / "email").glob("*.py"))


def project_texts(project: str) -> Iterator[tuple[Path, str]]:
    """(path, text) of a fetched project's files that decode; the test is skipped when the
    project is not fetched."""
    root = ROOT / "corpora" / project
    if not root.is_dir():
        pytest.skip(f"corpora/{project} not fetched")
    for path in sorted(root.rglob("*.py")):
        try:
            yield path, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def test_standard_library_bare_calls_are_all_candidates():
    sites, ruled_out = _check_real_files(stdlib_sample())
    assert sites > 2000 and ruled_out > 5  # both answers were exercised


@pytest.mark.parametrize("project", PROJECTS)
def test_fetched_projects_transfer_calls(project):
    for path, text in project_texts(project):
        if not TRANSFER_ATTRIBUTE.search(text):
            continue
        tree = python_parse(text, str(path))[0]
        if tree is not None and has_bare_method_call(tree, TRANSFERS):
            assert scan(text), path


# -- in the pipeline ------------------------------------------------------------------------------

ONLY_IN_EXPRESSIONS = (
    "import torch\n\n"
    "def load(batch, device):\n"
    "    x = batch.to(device, non_blocking=True)\n"
    "    return [t.cuda() for t in batch], x.cpu()\n"
)


def test_a_file_the_scan_rules_out_is_not_parsed(monkeypatch):
    parsed = []
    real = pipeline.python_parse
    monkeypatch.setattr(pipeline, "python_parse", lambda t, p: parsed.append(p) or real(t, p))
    settings = FileSettings(frozenset({"SYN001", "SYN302"}))
    assert lint_text(ONLY_IN_EXPRESSIONS, "load.py", settings).diagnostics == []
    assert parsed == []
    bare = ONLY_IN_EXPRESSIONS + "\ndef g(x):\n    x = torch.zeros(4)\n    x.cuda()\n"
    found = lint_text(bare, "bare.py", settings).diagnostics
    assert parsed == ["bare.py"] and [d.code for d in found] == ["SYN302"]


def test_a_syntax_error_is_still_reported_when_the_scan_rules_a_file_out():
    broken = ONLY_IN_EXPRESSIONS + "def broken(:\n"
    found = lint_text(broken, "broken.py", FileSettings(frozenset({"SYN001", "SYN302"})))
    assert [d.code for d in found.diagnostics] == ["SYN001"]


@GENERATED
@given(statements())
def test_generated_statements_lint_identically(text):
    if _parses(text):
        assert_generated_same("import torch\n\n" + text)
