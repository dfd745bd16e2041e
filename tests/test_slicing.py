"""Slicing: only the definitions some rule could report on reach libcst, and results never change.

The unit tests pin down what is blanked and what relevance spreads to; the differential tests lint
modules built to stress the name closure (fixtures glued together, with inert callers, callees and
aliases around them) with slicing on and off and demand identical diagnostics.
"""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_prefilter_differential import EVERY_RULE, assert_same

from synclint.pipeline import _plan
from synclint.slicing import Trigger, relevant_slice

ROOT = Path(__file__).resolve().parent.parent
STREAM = Trigger(("stream", "Stream"))

RACE = '''\
import torch

def produce(x):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = x * 2
    return y.sum()
'''


def sliced(text: str, triggers=((STREAM, None),)) -> str | None:
    return relevant_slice(text, ast.parse(text), list(triggers))


def kept_names(text: str) -> set[str]:
    out = sliced(text)
    tree = ast.parse(out if out is not None else text)
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def test_an_unrelated_function_is_blanked_keeping_every_line_and_column():
    text = RACE + "\n\n@decorator(\n    1)\ndef unrelated(a):\n    return a + 1\n\n\ndef tail():\n    pass\n"
    out = sliced(text)
    assert out is not None
    assert out.count("\n") == text.count("\n")
    assert "unrelated" not in out and "decorator" not in out
    assert out.splitlines()[: RACE.count("\n")] == RACE.splitlines()
    compile(out, "<sliced>", "exec")


def test_nothing_to_blank_gives_none():
    assert sliced(RACE) is None
    assert sliced("x = 1\n") is None


def test_a_helper_the_relevant_code_calls_is_kept_but_not_a_mere_caller():
    """A helper is summarised for the code that calls it; a caller only sees the summary (does it
    synchronize, does it return the current stream), which no rule reports on by itself."""
    text = (
        RACE
        + "\ndef helper(t):\n    return t + 1\n"
        + "\ndef caller(t):\n    return produce(t)\n"
        + "\ndef unrelated(t):\n    return t\n"
        + "\nclass Helper:\n    pass\n"
    )
    text = text.replace("y = x * 2", "y = helper(x) + Helper()")
    assert kept_names(text) == {"produce", "helper"}


def test_a_function_importing_a_name_relevant_code_uses_is_kept():
    """Import resolution reads imports at any depth: the import inside ``setup`` names ``tc``."""
    text = (
        "def setup():\n    import torch.cuda as tc\n    return 1\n"
        "\ndef run(x):\n    s = tc.Stream()\n    with tc.stream(s):\n        return x * 2\n"
        "\ndef other():\n    import os\n    return os.sep\n"
    )
    assert kept_names(text) == {"setup", "run"}


def test_an_alias_bound_by_a_relevant_import_makes_its_users_relevant():
    text = "from torch.cuda import Stream as S\n\ndef make():\n    return S()\n\ndef other():\n    return 1\n"
    assert kept_names(text) == {"make"}


def test_a_relevant_module_scope_keeps_what_it_calls():
    text = "import torch\n\ndef setup():\n    return 1\n\ndef unused():\n    return 2\n\nS = torch.cuda.Stream()\nsetup()\n"
    assert kept_names(text) == {"setup"}


def test_a_caller_of_a_relevant_context_manager_is_kept():
    """The model walks a ``@contextmanager`` function's halves where a ``with`` calls it, so its
    stream work becomes the caller's: a caller with no stream word of its own is relevant, and
    the race the helper's copy makes in it survives slicing."""
    text = (
        "import contextlib\nimport torch\n"
        "\n@contextlib.contextmanager\ndef copied_on_side(dst, src):\n"
        "    side = torch.cuda.Stream()\n"
        "    with torch.cuda.stream(side):\n        dst.copy_(src, non_blocking=True)\n"
        "    yield\n"
        "\ndef caller(dst, src):\n    src.add_(1)\n"
        "    with copied_on_side(dst, src):\n        pass\n    return dst\n"
        "\ndef unrelated(t):\n    return t\n"
    )
    assert kept_names(text) == {"copied_on_side", "caller"}
    found = assert_same(text, "manager.py")
    assert [(d.code, d.span.start.line) for d in found] == [("SYN101", 8)]


def test_a_class_whose_method_synchronizes_is_kept_for_code_that_names_it():
    """The model learns which methods of the file's classes synchronize, for calls on their
    instances: a timer class with no event of its own is kept when the timed code names it, so the
    end event its ``aggregate_ms()`` completed is not reported with slicing on (nor off); a class
    that says nothing of synchronizing, whose synchronizing method only ``self`` calls, or that
    the file never calls, is still blanked."""
    timer = (
        "import torch\n"
        "\nclass CommTimer:\n    def aggregate_ms(self):\n"
        "        torch.cuda.synchronize()\n        return 1.0\n"
        "\nclass Plain:\n    def f(self):\n        return 1\n"
        "\nclass Quiet:\n    def flush(self):\n        torch.cuda.synchronize()\n"
        "    def run(self):\n        self.flush()\n"
        "\nclass Unmade:\n    def drain(self):\n        torch.cuda.synchronize()\n"
        "\ndef timed(model, x, other: Unmade):\n"
        "    start = torch.cuda.Event(enable_timing=True)\n"
        "    end = torch.cuda.Event(enable_timing=True)\n"
        "    timer, plain, quiet = CommTimer(), Plain(), Quiet()\n"
        "    start.record()\n    model(x)\n    end.record()\n"
        "    {call}\n"
        "    other.drain()\n"
        "    return start.elapsed_time(end)\n"
    )
    events = Trigger(("Event",))
    text = timer.format(call="timer.aggregate_ms()")
    kept = sliced(text, ((events, None),))
    assert kept is not None and "class CommTimer" in kept
    assert "class Plain" not in kept and "class Quiet" not in kept  # `flush` is only self's
    assert "class Unmade" not in kept  # the file never calls `Unmade(`
    assert assert_same(text, "timer.py") == []
    unsynchronized = timer.format(call="plain.f()")
    found = assert_same(unsynchronized, "timer.py")
    assert [(d.code, d.span.start.line) for d in found] == [("SYN203", 31)]


def test_a_class_whose_method_reads_a_tensor_on_the_host_is_kept_for_code_that_names_it():
    """A method of another object that reads a tensor on the host (``k.cpu()``) makes the host wait
    for the caller's stream: the cache class is kept, so the side stream's read after
    ``self.cache.update(k)`` is not reported with slicing on (nor off); when the method copies
    without blocking, the race is reported both ways."""
    text = (
        "import torch\n"
        "\nside = torch.cuda.Stream()\n"
        "\nclass HostCache:\n    def update(self, k):\n        return k.{copy}\n"
        "\nclass Layer:\n    def __init__(self):\n        self.cache = HostCache()\n"
        "    def forward(self, x):\n        nxt = x + 1\n        self.cache.update(x)\n"
        "        with torch.cuda.stream(side):\n            nxt.mul_(3)\n"
        "        side.synchronize()\n"
        "\nclass Plain:\n    def f(self):\n        return 1\n"
    )
    blocking = text.format(copy="cpu()")
    kept = sliced(blocking)
    assert kept is not None and "class HostCache" in kept and "class Plain" not in kept
    assert assert_same(blocking, "cache.py") == []
    found = assert_same(text.format(copy='to("cpu", non_blocking=True)'), "cache.py")
    assert [(d.code, d.span.start.line) for d in found] == [("SYN101", 16)]


def test_a_class_whose_waiting_method_relevant_code_calls_is_kept_with_its_makers():
    """Relevant code that calls ``self.kv_cache.update(k)`` names neither the cache's class nor
    where it is made: the class is kept because its ``update`` reads a tensor on the host and is
    called there, and so is the code that makes its instances (``kv_cache = KVCache()``), which
    tells the model what the attribute holds. A class no relevant code calls into stays blank."""
    text = (
        "import torch\n"
        "\nside = torch.cuda.Stream()\n"
        "\nclass KVCache:\n    def update(self, k):\n        return k.cpu()\n"
        "\nclass Meter:\n    def add(self, v):\n        return v.item()\n"
        "\nclass Layer:\n    def forward(self, x):\n        nxt = x + 1\n"
        "        self.kv_cache.update(x)\n"
        "        with torch.cuda.stream(side):\n            nxt.mul_(3)\n"
        "        side.synchronize()\n"
        "\ndef setup(layers):\n    for layer in layers:\n        kv_cache = KVCache()\n"
        "        layer.kv_cache = kv_cache\n"
        "\ndef report(m: Meter, v):\n    Meter().add(v)\n"
    )
    kept = sliced(text)
    assert kept is not None
    assert "class KVCache" in kept and "def setup" in kept
    assert "class Meter" not in kept and "def report" not in kept
    assert assert_same(text, "cache.py") == []


def test_classes_are_kept_whole():
    text = (
        "class Prefetcher:\n"
        "    def __init__(self):\n        self.s = torch.cuda.Stream()\n"
        "    def get(self):\n        return self.buf\n"
        "\nclass Plain:\n    def f(self):\n        return 1\n"
    )
    out = sliced(text)
    assert "def get(self)" in out and "class Plain" not in out


def test_line_endings_are_kept():
    text = RACE.replace("\n", "\r\n") + "\r\ndef unrelated():\r\n    return 1\r\n"
    out = sliced(text)
    assert out is not None and out.count("\r\n") == text.count("\r\n") and "\n" not in out.replace("\r\n", "")


def test_the_pipeline_parses_the_slice_of_a_mostly_unrelated_module():
    text = RACE + "".join(f"\ndef f{i}(a):\n    return a + {i}\n" for i in range(20))
    plan = _plan(text, "m.py", EVERY_RULE.codes)
    assert plan.analysis is None and plan.text is not text
    assert "def f3" not in plan.text and "def produce" in plan.text


# -- differential ---------------------------------------------------------------------------------

FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py") if "confirm" not in p.parts)

INERT = [
    "def {name}(a, b=None):\n    return a + 1\n",
    "def {name}(a):\n    out = {other}(a)\n    return out\n",
    "class {cap}:\n    def run(self, x):\n        return {other}(x)\n",
    "def {name}(a):\n    for i in range(3):\n        a = a * 2\n    return a.item()\n",
    "@functools.lru_cache()\ndef {name}():\n    return {other}\n",
]


def _defined_names(text: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_glued_fixtures_with_inert_neighbours_lint_identically(seed):
    rng = random.Random(seed)
    parts = [p.read_text(encoding="utf-8") for p in rng.sample(FIXTURES, 3)]
    names = [n for part in parts for n in _defined_names(part)] or ["len"]
    pieces = []
    for index, part in enumerate(parts):
        pieces.append(part)
        for k in range(rng.randint(0, 3)):
            template = rng.choice(INERT)
            pieces.append(
                template.format(
                    name=f"inert_{index}_{k}", cap=f"Inert{index}{k}", other=rng.choice(names)
                )
            )
    rng.shuffle(pieces)
    text = "import functools\n" + "\n\n".join(pieces)
    if _defined_names(text):
        assert_same(text, f"glued_{seed}.py")


def test_slicing_happens_on_the_glued_modules_and_findings_survive():
    """The differential above is not vacuous: on glued fixtures the slicer does blank code, and the
    bad fixtures' findings are still reported."""
    bad = sorted(p for p in FIXTURES if p.name.startswith("bad_"))[:30]
    blanked = findings = 0
    for path in bad:
        text = path.read_text(encoding="utf-8") + "\n\ndef unrelated_tail(a):\n    return a + 1\n"
        plan = _plan(text, path.name, EVERY_RULE.codes)
        if plan.analysis is None and plan.text is not text:
            blanked += 1
        findings += len(assert_same(text, path.name))
    assert blanked >= 20 and findings >= 30


def test_module_level_aliases_reach_their_users_but_plain_imports_do_not():
    graph = (Trigger(("graph",), (re.compile(r"\bgraph\b"),)), lambda tree, text: False)  # not asked
    text = (
        "import torch.cuda\nfrom torch.cuda import graph as capture\n"
        "\ndef f(g):\n    with capture(g):\n        torch.cuda.synchronize()\n"
        "\ndef other(x):\n    return torch.cuda.device_count() + x\n"
    )
    out = relevant_slice(text, ast.parse(text), [graph])
    assert out is not None and "def f(g)" in out and "def other(x)" not in out


def test_fixes_are_the_same_when_a_definition_before_them_is_blanked():
    """Fixes are computed on the slice but applied to the file: spans must agree."""
    from synclint.fixer import fix_text
    from synclint.pipeline import lint_text

    head = "def unrelated_head(a):\n    b = a + 1\n    return b * 2\n\n\n"
    fixed = 0
    for path in sorted(p for p in FIXTURES if p.name.startswith("bad_"))[::3]:
        text = path.read_text(encoding="utf-8")
        if "from __future__" in text:
            continue

        def lint(source: str, name: str = path.name):
            return lint_text(source, name, EVERY_RULE).diagnostics

        alone, behind = fix_text(text, lint, True), fix_text(head + text, lint, True)
        assert _plan(head + text, path.name, EVERY_RULE.codes).text.startswith("pass\n")
        assert behind.text == head + alone.text, path
        assert behind.applied == alone.applied, path
        fixed += alone.applied
    assert fixed >= 20
