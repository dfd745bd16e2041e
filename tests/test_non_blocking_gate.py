"""The gates of the copy and timing rules never rule out a file the model could report on.

SYN301, SYN303 and SYN304 need a copy the model takes for non-blocking: ``non_blocking=True``
(the name ``True``) or ``True`` as the second positional argument of ``copy_`` or ``to``; a flag
passed on (``non_blocking=non_blocking``) is not one. :func:`synclint.rules._common.
may_copy_non_blocking` asks that of the text, and :func:`synclint.textscan.may_pass_true_later`
reads each call's arguments for the positional spelling, skipping strings and comments. SYN202,
SYN203 and SYN206 need a call of ``.elapsed_time``, not the word in a metric's name.

The truth here is CPython's tree, read as the model reads libcst's: the scan must say yes wherever
the tree has such a copy (hand-written cases, generated argument lists, every attribute call in
part of the standard library, the fetched projects when present), and linting with the prefilter
on and off must agree. The last tests check that a file with only the words is not modelled.
"""

from __future__ import annotations

import ast
import re
import time
from functools import lru_cache

import pytest
from hypothesis import find, given
from hypothesis import strategies as st
from test_prefilter_differential import GENERATED, assert_generated_same, assert_reported
from test_textscan import PROJECTS, project_texts, stdlib_sample

from synclint.astscan import python_parse
from synclint.pipeline import FileSettings, lint_text
from synclint.rules._common import POSITIONAL_NON_BLOCKING, may_copy_non_blocking, method_pattern
from synclint.textscan import may_pass_true_later


def _true(node: ast.expr) -> bool:
    return type(node) is ast.Constant and node.value is True


def true_later_in_tree(call: ast.Call) -> bool:
    """Is ``True`` a whole positional argument after the first? (``(True)`` is ``True`` too.)"""
    return any(_true(arg) for arg in call.args[1:])


def copies_non_blocking(tree: ast.AST) -> bool:
    """The model's test: a ``non_blocking=True`` keyword, or ``True`` as the second plain
    positional argument of ``copy_`` or ``to``."""
    for node in ast.walk(tree):
        if type(node) is not ast.Call:
            continue
        if any(k.arg == "non_blocking" and _true(k.value) for k in node.keywords):
            return True
        plain = [a for a in node.args if type(a) is not ast.Starred]
        func = node.func
        if type(func) is ast.Attribute and func.attr in ("copy_", "to") and len(plain) > 1:
            if _true(plain[1]):
                return True
    return False


def in_tree(text: str) -> bool:
    return copies_non_blocking(ast.parse(text))


@pytest.mark.parametrize(
    "text",
    [
        "host.copy_(gpu, True)\n",
        "host.copy_(gpu.view(gpu.size(0)), True)\n",
        "host.copy_(gpu,  # async\n           True)\n",
        "y = x.to('cuda', True)\n",
        "y = x.to('a,b)', (True))\n",
        "y = x.to(f'{d}', True)\n",
        "y = x.to(r'\\'', True)\n",
        "y = x.to('''\n)''', True)\n",
        "y = x.to(d, ( # c\n    True ))\n",
        "y = (x.to)(d, True)\n",
        "y = x . to \\\n    (d, True)\n",
        "y = x.to(d, non_blocking=True)\n",
        "y = x.to(d, non_blocking = (True))\n",
        "y = x.cuda(non_blocking=\n    # why\n    True)\n",
        "f(x.to(d, True), y)\n",
    ],
)
def test_non_blocking_copies_are_candidates(text):
    assert in_tree(text)
    assert may_copy_non_blocking(text)


@pytest.mark.parametrize(
    "text",
    [
        "y = x.to(d, non_blocking=non_blocking)\n",
        "def f(non_blocking: bool = False):\n    pass\n",
        "y = x.to('cuda')\n",
        "y = x.to(f(a, True))\n",
        "y = x.to((a, True), False)\n",
        "y = x.to(d, [True])\n",
        "y = x.to(d, Truex)\n",
        "y = x.to(d)\nz = g(a, True)\n",
        "y = x.to('a, True)')\n",
        "y = x.to(d)  # , True)\n",
        "y = getattr(x, 'to', True)\n",
        "options = {'non_blocking': False}\n",
    ],
)
def test_other_calls_are_ruled_out(text):
    assert not in_tree(text)
    assert not may_copy_non_blocking(text)


# -- generated argument lists ---------------------------------------------------------------------

CALLEES = st.sampled_from(["host.copy_", "x.to", "x . to", "x.\\\n    to", "(x.to)", "x.cuda", "f"])
FIRST = st.sampled_from(
    [
        "gpu",
        "gpu.view(gpu.size(0))",
        "'cuda'",
        "'a, True)'",
        '"it\'s"',
        "'''x\n)'''",
        "r'\\''",
        "b'\\\\'",
        "f'{d}'",
        "f'{d!r}, True'",
        "(a, True)",
        "[True]",
        "g(h(a), True)",
        "*args",
        "device=d",
    ]
)
LATER = st.sampled_from(
    [
        "True",
        "(True)",
        "( # why\n    True )",
        "False",
        "non_blocking=True",
        "non_blocking = (True)",
        "non_blocking=flag",
        "f(True)",
        "Truex",
        "'True'",
        "memory_format=m",
        "*rest",
    ]
)
SEPARATORS = st.sampled_from([", ", ",", ",\n    ", ", # note\n    ", ", \\\n    "])


@st.composite
def copy_calls(draw) -> str:
    args = [draw(FIRST)] + [draw(LATER) for _ in range(draw(st.integers(0, 2)))]
    joined = args[0]
    for arg in args[1:]:
        joined += draw(SEPARATORS) + arg
    return f"{draw(CALLEES)}({joined})"


def _compiles(text: str) -> bool:
    try:
        compile(text, "generated.py", "exec")
    except SyntaxError:
        return False
    return True


@GENERATED
@given(copy_calls())
def test_generated_calls_never_ruled_out_wrongly(call):
    text = f"y = {call}\n"
    if _compiles(text) and in_tree(text):
        assert may_copy_non_blocking(text), text


def test_call_generator_makes_both_answers():
    """Guard against a vacuous property: the generator makes non-blocking copies, and calls the
    scan rules out."""
    assert find(copy_calls(), lambda c: _compiles(f"y = {c}\n") and in_tree(f"y = {c}\n"))
    assert find(copy_calls(), lambda c: _compiles(f"y = {c}\n") and not may_copy_non_blocking(c))


def _host_read_program(call: str) -> str:
    """A pinned host buffer filled by ``call`` and read on the host: SYN301 when ``call`` is a
    non-blocking copy into ``host``."""
    return (
        "import torch\n\n"
        "def fetch(gpu, d, g, h, a, flag, m, args, rest):\n"
        "    host = torch.empty(4, pin_memory=True)\n"
        f"    {call.replace(chr(10), chr(10) + '    ')}\n"
        "    return host.tolist()\n"
    )


@GENERATED
@given(copy_calls())
def test_generated_copies_lint_identically(call):
    text = _host_read_program(call.replace("x", "host", 1))
    if _compiles(text):
        assert_generated_same(text)


def test_the_generated_copies_reach_syn301():
    assert_reported(
        ("SYN301", _host_read_program("host.copy_(gpu.view(gpu.size(0)), True)")),
        ("SYN301", _host_read_program("host.copy_(gpu,  # async\n    True)")),
        ("SYN301", _host_read_program("host.copy_(gpu, non_blocking = (True))")),
    )


WAITED_COPY = (
    "import torch\n\n\n"
    "def fetch(gpu):\n"
    "    done = torch.cuda.Event()\n"
    "    host = torch.empty(4, device='cpu')\n"
    "    host.copy_(gpu.view(gpu.size(0)), True)\n"
    "    done.record()\n"
    "    done.wait()\n"
    "    return host.tolist()\n"
)


def test_syn201_sees_a_positional_non_blocking_copy():
    """SYN201's requirement (a sign that the host needed the work) is the same exact test: this
    file names no other sign, and lost both findings with the prefilter on."""
    assert_reported(("SYN201", WAITED_COPY), ("SYN301", WAITED_COPY))


# -- real code ------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _called_attribute(name: str) -> re.Pattern:
    return re.compile(method_pattern(re.escape(name)) + r"(?=[\s\\)#]*\()")


def _check_real_calls(paths) -> tuple[int, int]:
    """At every attribute call of every file, the scan of that call agrees with the tree wherever
    ``True`` is a later argument. Returns (such calls, other calls the scan ruled out)."""
    candidates = ruled_out = 0
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
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        for node in ast.walk(tree):
            if type(node) is not ast.Call or type(node.func) is not ast.Attribute:
                continue
            # The call's own text (``ast`` columns count UTF-8 bytes: only ASCII lines are cut).
            first, last = lines[node.lineno - 1], lines[node.end_lineno - 1]
            if not (first.isascii() and last.isascii()):
                continue
            begin = starts[node.lineno - 1] + node.col_offset
            own = text[begin : starts[node.end_lineno - 1] + node.end_col_offset]
            # An earlier call of the same name in the receiver is read too: that can only add a yes.
            said = may_pass_true_later(own, _called_attribute(node.func.attr))
            if true_later_in_tree(node):
                candidates += 1
                assert said, (path, node.lineno)
            elif not said:
                ruled_out += 1
        if copies_non_blocking(tree):
            assert may_copy_non_blocking(text), path
    return candidates, ruled_out


def test_standard_library_calls():
    candidates, ruled_out = _check_real_calls(stdlib_sample())
    assert candidates > 20 and ruled_out > 10_000  # both answers were exercised


@pytest.mark.parametrize("project", PROJECTS)
def test_fetched_projects_copies(project):
    for path, text in project_texts(project):
        if not POSITIONAL_NON_BLOCKING.search(text) and "non_blocking" not in text:
            continue
        tree = python_parse(text, str(path))[0]
        if tree is not None and copies_non_blocking(tree):
            assert may_copy_non_blocking(text), path


def _many_string_calls(lines: int) -> str:
    return "import torch\n\n" + "".join(f"y{i} = x.to('cuda:{i % 8}', flag)\n" for i in range(lines))


def _best_scan_seconds(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        assert not may_copy_non_blocking(text)
        best = min(best, time.perf_counter() - started)
    return best


def test_the_scan_is_linear_in_the_text():
    """Ten times the text, about ten times the time. Finding each string's prefix from the start
    of the file made it quadratic: 1.8 s for 2,000 such lines, 197 s for 20,000."""
    small = _best_scan_seconds(_many_string_calls(2_000))
    large = _best_scan_seconds(_many_string_calls(20_000))
    assert large < 30 * small + 0.05, (small, large)


# -- in the pipeline ------------------------------------------------------------------------------

FLAG_PASSED_ON = (
    "import torch\n\n"
    "class Engine:\n"
    "    def __init__(self):\n"
    "        self.stream = torch.cuda.Stream()\n\n"
    "    def reload_states(self, non_blocking: bool = False):\n"
    "        self.optimizer.reload_states(non_blocking=non_blocking)\n\n"
    "    def log(self, writer, ms):\n"
    "        writer.add_scalar('Train/Samples/elapsed_time_ms_forward', ms)\n"
)


def test_words_alone_do_not_build_the_model(monkeypatch):
    """A flag passed on and ``elapsed_time`` in a metric's name: no rule among SYN202/203/206
    and SYN301/303/304 can report, so the stream model is never built."""
    import synclint.model as model

    built = []
    real = model.build_module_model
    monkeypatch.setattr(model, "build_module_model", lambda *a, **k: built.append(1) or real(*a, **k))
    codes = frozenset({"SYN001", "SYN202", "SYN203", "SYN206", "SYN301", "SYN303", "SYN304"})
    settings = FileSettings(codes)
    assert lint_text(FLAG_PASSED_ON, "engine.py", settings).diagnostics == []
    assert built == []
    timed = FLAG_PASSED_ON + (
        "\n\ndef timed(x):\n"
        "    start = torch.cuda.Event()\n"
        "    end = torch.cuda.Event()\n"
        "    start.record()\n"
        "    y = x * 2\n"
        "    end.record()\n"
        "    end.synchronize()\n"
        "    return start.elapsed_time(end)\n"
    )
    found = lint_text(timed, "timed.py", settings).diagnostics
    assert built and [d.code for d in found] == ["SYN202"]


ELAPSED = st.sampled_from(
    [
        "start.elapsed_time(end)",
        "start . elapsed_time (end)",
        "start.\\\n        elapsed_time(end)",
        "(start.\n        # timing\n        elapsed_time(end))",
        "(start.elapsed_time)(end)",
    ]
)
EVENTS = st.sampled_from(["torch.cuda.Event()", "torch.cuda.Event(enable_timing=True)"])
SYNCED = st.sampled_from(["    end.synchronize()\n", ""])


@st.composite
def timing_programs(draw) -> str:
    return (
        "import torch\n\n"
        "def timed(x):\n"
        f"    start = {draw(EVENTS)}\n"
        f"    end = {draw(EVENTS)}\n"
        "    start.record()\n"
        "    y = x * 2\n"
        "    end.record()\n"
        f"{draw(SYNCED)}"
        f"    return {draw(ELAPSED)}\n"
    )


@GENERATED
@given(timing_programs())
def test_generated_timing_lints_identically(text):
    assert_generated_same(text)


def test_the_generated_timing_reaches_its_rules():
    spaced = "start.\\\n        elapsed_time(end)"
    assert_reported(
        ("SYN202", "import torch\n\ndef t(x):\n    start = torch.cuda.Event()\n"
                   "    end = torch.cuda.Event()\n    start.record()\n    y = x * 2\n"
                   f"    end.record()\n    end.synchronize()\n    return {spaced}\n"),
        ("SYN203", "import torch\n\ndef t(x):\n    start = torch.cuda.Event(enable_timing=True)\n"
                   "    end = torch.cuda.Event(enable_timing=True)\n    start.record()\n"
                   f"    y = x * 2\n    end.record()\n    return {spaced}\n"),
    )
