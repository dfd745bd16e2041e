"""The text prefilter (per-rule trigger words and patterns) never changes what synclint reports.

The prefilter skips the libcst parse for files no enabled rule can fire on, runs only the rules
whose triggers occur in a file, and hands libcst only the definitions those rules could report on
(:mod:`synclint.slicing`). That is only an optimisation if it is invisible: every test here lints
the same text with the prefilter on and off, with every rule enabled, and demands identical
diagnostics. Inputs: the fixtures, a generated corpus of realistic modules, a sample of DeepSpeed
when ``corpora/DeepSpeed`` is present, and generated programs that spell transfers, host clocks and
calls of the stream API in every way Python allows (the case a trigger pattern or a rule's gate is
most likely to get wrong).
"""

from __future__ import annotations

import ast
import importlib.util
import random
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synclint.pipeline import FileSettings, codes_that_may_fire, lint_text
from synclint.rules.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
DEEPSPEED = ROOT / "corpora" / "DeepSpeed"
EVERY_RULE = FileSettings(frozenset(all_rules()))


def assert_same(text: str, name: str) -> list:
    on = lint_text(text, name, EVERY_RULE, prefilter=True)
    off = lint_text(text, name, EVERY_RULE, prefilter=False)
    assert on.diagnostics == off.diagnostics, name
    assert on.errors == off.errors, name
    return off.diagnostics


def assert_generated_same(source: str) -> None:
    """A generated program lints the same with the prefilter on and off; it must be valid Python,
    or the case proves nothing."""
    compile(source, "generated.py", "exec")
    assert_same(source, "generated.py")


def assert_reported(*cases: tuple[str, str]) -> None:
    """Guard against a vacuous property: each ``(code, text)`` lints the same with the prefilter
    on and off, and reports ``code``."""
    for index, (code, text) in enumerate(cases):
        assert code in [d.code for d in assert_same(text, f"{code}_{index}.py")], code


#: Hypothesis settings for the generated programs (linting one takes milliseconds).
GENERATED = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _gen_corpus():
    spec = importlib.util.spec_from_file_location(
        "gen_corpus", ROOT / "benchmarks" / "gen_corpus.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_corpus"] = module
    spec.loader.exec_module(module)
    return module


def test_fixtures_and_rule_pages_lint_identically():
    findings = 0
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        findings += len(assert_same(path.read_text(encoding="utf-8"), str(path)))
    assert findings > 50  # the comparison covers real findings, not only clean files


def test_every_expected_finding_has_its_rule_triggered():
    """A bad fixture's expected codes are all among the rules the prefilter lets run."""
    for path in sorted((ROOT / "fixtures").rglob("bad_*.py")):
        text = path.read_text(encoding="utf-8")
        may_fire = codes_that_may_fire(text, EVERY_RULE.codes)
        for code in re.findall(r"# error:\s*((?:SYN\d{3}[,\s]*)+)", text):
            for one in re.findall(r"SYN\d{3}", code):
                assert one in may_fire, f"{path}: {one} filtered out"


def test_generated_corpus_lints_identically(tmp_path):
    gen = _gen_corpus()
    gen.generate(tmp_path, 6_000, stream_fraction=0.4, seed=11)
    findings = 0
    for path in sorted(tmp_path.rglob("*.py")):
        findings += len(assert_same(path.read_text(encoding="utf-8"), str(path)))
    assert findings > 0


@pytest.mark.skipif(not DEEPSPEED.is_dir(), reason="corpora/DeepSpeed not fetched")
def test_deepspeed_sample_lints_identically():
    files = sorted(DEEPSPEED.rglob("*.py"))
    streamy = [p for p in files if b"stream" in p.read_bytes()]
    rng = random.Random(6)
    sample = rng.sample(files, min(25, len(files))) + rng.sample(streamy, min(8, len(streamy)))
    for path in sample:
        assert_same(path.read_text(encoding="utf-8", errors="replace"), str(path))


# -- generated spellings ---------------------------------------------------------------------------

# Between ``.`` and an attribute name Python allows spaces, ``\`` continuations and, inside
# brackets, newlines and comments.
DOTS = st.sampled_from([".", " . ", ".\\\n    ", ". \\\n  ", "\n    .", ".\n    # moved\n    "])
TRANSFERS = st.sampled_from(
    ["to('cuda')", "to('cpu', non_blocking=True)", "cuda()", "cpu()", "pin_memory()"]
)
RECEIVERS = st.sampled_from(["x", "x.detach()", "torch.zeros(4)", "self.buf", "batch[0]"])
CLOCK_IMPORTS = st.sampled_from(
    [
        "import time",
        "import time as t",
        "from time import perf_counter",
        "from time import monotonic as mono",
        "import timeit",
        "from timeit import default_timer",
        "import os, time",
        "",
    ]
)
CLOCK_CALLS = {
    "import time": "time.perf_counter()",
    "import time as t": "t.time()",
    "from time import perf_counter": "perf_counter()",
    "from time import monotonic as mono": "mono()",
    "import timeit": "timeit.default_timer()",
    "from timeit import default_timer": "default_timer()",
    "import os, time": "time.time()",
    "": "clock()",
}


@st.composite
def transfer_programs(draw) -> str:
    clock_import = draw(CLOCK_IMPORTS)
    clock = CLOCK_CALLS[clock_import]
    lines = [
        "import torch",
        clock_import,
        "",
        "def f(x, batch):",
        "    x = torch.zeros(8, device='cuda')",
    ]
    for _ in range(draw(st.integers(1, 4))):
        dot, transfer, receiver = draw(DOTS), draw(TRANSFERS), draw(RECEIVERS)
        statement = f"{receiver}{dot}{transfer}"
        if "\n" in dot and "\\" not in dot:
            statement = f"({statement})"  # newlines and comments need brackets
        statement = statement.replace("\n", "\n    ")
        choice = draw(st.sampled_from(["bare", "assigned", "timed"]))
        if choice == "bare":
            lines.append(f"    {statement}")
        elif choice == "assigned":
            lines.append(f"    y = {statement}")
        else:
            lines += [
                f"    t0 = {clock}",
                "    y = x @ x",
                f"    t1 = {clock}",
                "    print(t1 - t0)",
            ]
    return "\n".join(lines) + "\n"


@GENERATED
@given(transfer_programs())
def test_generated_transfer_and_clock_spellings_lint_identically(source):
    assert_generated_same(source)


def test_spelling_generator_reaches_the_rules_it_targets():
    """Guard against a vacuous property: these spellings do produce SYN302 and SYN205 findings."""
    bare = (
        "import torch\n\ndef f():\n    x = torch.zeros(4)\n    (x.\n     # moved\n     cuda())\n"
        "    return x\n"
    )
    timed = (
        "import torch\nfrom time import perf_counter\n\ndef f():\n    x = torch.zeros(4, device='cuda')\n"
        "    t0 = perf_counter()\n    y = x @ x\n    t1 = perf_counter()\n    print(t1 - t0)\n"
    )
    assert_reported(("SYN302", bare), ("SYN205", timed))


# -- the ast-side syntax checks agree with what the rules see in libcst ----------------------------


def _libcst_bare_calls(source: str, methods: frozenset[str]) -> bool:
    import libcst as cst

    from synclint.cstwalk import walk

    found = []

    class Bare(cst.CSTVisitor):
        def visit_Expr(self, node):
            call = node.value
            if (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in methods
            ):
                found.append(node)

    walk(cst.parse_module(source), Bare())
    return bool(found)


def test_statement_scan_reaches_every_kind_of_block():
    from synclint.astscan import has_bare_method_call

    blocks = [
        "class C:\n    def m(self):\n        x.cuda()\n",
        "async def f():\n    async with a:\n        x.cuda()\n",
        "try:\n    pass\nexcept E:\n    x.cuda()\n",
        "try:\n    pass\nfinally:\n    x.cuda()\n",
        "for i in r:\n    pass\nelse:\n    x.cuda()\n",
        "while c:\n    if d:\n        pass\n    elif e:\n        x.cuda()\n",
        "match v:\n    case 1:\n        x.cuda()\n",
    ]
    if sys.version_info >= (3, 11):
        blocks.append("try:\n    pass\nexcept* E:\n    x.cuda()\n")
    for source in blocks:
        tree = compile(source, "b.py", "exec", 0x400)
        assert has_bare_method_call(tree, frozenset({"cuda"})), source
        assert not has_bare_method_call(tree, frozenset({"cpu"})), source
        assert _libcst_bare_calls(source, frozenset({"cuda"}))


def test_bare_call_scan_matches_libcst_on_corpus(tmp_path):
    import ast

    from synclint.astscan import has_bare_method_call
    from synclint.rules.syn302_discarded_transfer_result import TRANSFERS

    gen = _gen_corpus()
    gen.generate(tmp_path, 3_000, stream_fraction=0.5, seed=5)
    paths = sorted((ROOT / "fixtures").rglob("*.py")) + sorted(tmp_path.rglob("*.py"))
    if DEEPSPEED.is_dir():
        paths += random.Random(2).sample(sorted(DEEPSPEED.rglob("*.py")), 40)
    agreed = 0
    for path in paths:
        source = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        assert has_bare_method_call(tree, TRANSFERS) == _libcst_bare_calls(source, TRANSFERS), path
        agreed += 1
    assert agreed > 50


GRAPH_OPENERS = st.sampled_from(
    [
        ("import torch", "with torch.cuda.graph(g):"),
        ("from torch.cuda import graph as capture", "with capture(g):"),
        ("import torch.cuda.graphs as graphs", "with graphs.graph(g):"),
        ("from torch.cuda import graphs", "with graphs.graph(g, pool=None) as ctx:"),
        ("import torch", "g.capture_begin()"),
    ]
)
GRAPH_SYNCS = st.sampled_from(
    ["torch.cuda.synchronize()", "y.item()", "s.synchronize()", "y.cpu()", "pass"]
)
TIME_HEADERS = st.sampled_from(["", "import time", "# timing: time.time() below", '"""time it"""'])


@st.composite
def graph_and_timer_programs(draw) -> str:
    imports, opener = draw(GRAPH_OPENERS)
    sync = draw(GRAPH_SYNCS)
    header = draw(TIME_HEADERS)
    body = [
        "g = torch.cuda.CUDAGraph()",
        "s = torch.cuda.Stream()",
        "y = torch.ones(4, device='cuda')",
    ]
    if opener.endswith(":"):
        body += [opener, "    y = y * 2", f"    {sync}"]
    else:
        body += [opener, "y = y * 2", sync, "g.capture_end()"]
    if draw(st.booleans()):
        body += ["t0 = time.time()", "z = y @ y", "t1 = time.time()", "print(t1 - t0)"]
    return (
        "\n".join(
            ["import torch", imports, header, "", "def f():", *("    " + line for line in body)]
        )
        + "\n"
    )


@settings(GENERATED, max_examples=100)
@given(graph_and_timer_programs())
def test_generated_graph_capture_and_timer_spellings_lint_identically(source):
    assert_generated_same(source)


def test_graph_and_timer_generator_reaches_its_rules():
    captured = (
        "import torch\nfrom torch.cuda import graph as capture\n\ndef f():\n"
        "    g = torch.cuda.CUDAGraph()\n    with capture(g):\n        torch.cuda.synchronize()\n"
    )
    unimported = (
        "import torch\n\ndef f():\n    x = torch.zeros(4, device='cuda')\n    t0 = time.time()\n"
        "    y = x @ x\n    t1 = time.time()\n    print(t1 - t0)\n"
    )
    assert_reported(("SYN502", captured), ("SYN205", unimported))


def test_module_and_with_scans():
    import ast

    from synclint.astscan import has_with_call_of, imports_or_names_module, uses_identifier

    time_mod = frozenset({"time", "timeit"})
    yes = [
        "import time",
        "import os.path, time as t",
        "from time import perf_counter",
        "from timeit import default_timer as timer",
        "def f():\n    import time\n",
        "x = time.time()",
        "from . import time",
    ]
    no = ["# time.time()", '"""time it"""', "x = self.time", "import timer", "runtime = 1"]
    for source in yes:
        assert imports_or_names_module(ast.parse(source), time_mod), source
    for source in no:
        assert not imports_or_names_module(ast.parse(source), time_mod), source
    # Given the text, the (costly) walk for a bare use runs only where ``time.`` occurs.
    for source in yes + ["t0 = time . perf_counter()"]:
        assert imports_or_names_module(ast.parse(source), time_mod, source), source
    for source in no + ["# at the same time\nclock = 1"]:
        assert not imports_or_names_module(ast.parse(source), time_mod, source), source
    graph = frozenset({"graph"})
    assert has_with_call_of(
        ast.parse(
            "class C:\n    def m(self):\n        with open(p), cuda.graph(g) as y:\n"
            "            pass\n"
        ),
        graph,
    )
    assert not has_with_call_of(ast.parse("with graph:\n    pass\n"), graph)
    assert not has_with_call_of(ast.parse("with open(graph):\n    pass\n"), graph)
    assert uses_identifier(ast.parse("g.capture_begin()"), frozenset({"capture_begin"}))
    assert not uses_identifier(ast.parse("'capture_begin'"), frozenset({"capture_begin"}))


ALIASED = [
    # Each rule's requirement must survive an aliased import of what it looks for.
    "from torch.cuda import graph as cuda_graph\n\ndef f(g, x):\n    ev = torch.cuda.Event()\n"
    "    with cuda_graph(g):\n        y = x * 2\n        ev.synchronize()\n    return y\n",
    "from torch.cuda import stream as ctx\n\ndef f():\n    with ctx():\n        pass\n",
    "from torch.cuda import event as make\n\ndef f():\n    return make()\n",
    "from torch.cuda import current_stream as cs\n\ndef f(x):\n    x.record_stream(cs)\n",
    "from torch.cuda import Stream as S, stream as ctx\n\ndef f(x):\n    s = S()\n"
    "    with ctx(s):\n        y = x * 2\n    return y\n",
    "from torch.cuda import Event as E\n\ndef f():\n    e = E()\n    e.wait()\n",
    "from torch.cuda import Stream as S\n\ndef f(xs):\n    for x in xs:\n        s = S()\n"
    "        with torch.cuda.stream(s):\n            x.mul_(2)\n",
    # A chain of module-level aliases: only the first names the class.
    "cuda = torch.cuda\nEv = cuda.Event\nEv2 = Ev\n\ndef f():\n    return Ev2(enable_timings=True)\n",
]


EXPECTED = ["SYN502", "SYN501", "SYN501", "SYN501", "SYN101", "SYN204", "SYN105", "SYN501"]


@pytest.mark.parametrize("index", range(len(ALIASED)))
def test_aliased_imports_keep_their_rules(index):
    text = "import torch\n" + ALIASED[index]
    assert EXPECTED[index] in [d.code for d in assert_same(text, f"aliased_{index}.py")]


# -- calls of the stream API, spelled every way Python allows ------------------------------------

# Between a callee's name and its ``(``: spaces, a ``\`` continuation, and, inside brackets, line
# breaks, comments and the closing bracket of a parenthesized callee.
CALL_GAPS = st.sampled_from(["", " ", " \\\n    ", "\n    ", "  # why\n    ", ")"])
# (import line, how the code then calls the Event class, the stream context, the graph context)
API_IMPORTS = st.sampled_from(
    [
        ("", "torch.cuda.Event", "torch.cuda.stream", "torch.cuda.graph"),
        ("from torch.cuda import Event as Ev, stream as ctx, graph as cap", "Ev", "ctx", "cap"),
        ("from torch.cuda import (\n    Event  # timing\n    as Ev,\n)", "Ev", "torch.cuda.stream", "torch.cuda.graph"),
        ("Ev = torch.cuda.Event\nctx = torch.cuda.stream\ncap = torch.cuda.graph", "Ev", "ctx", "cap"),
        ("cuda = torch.cuda\nEv = cuda.Event\nEv2 = Ev", "Ev2", "cuda.stream", "cuda.graph"),
        ("import torch.cuda as tc", "tc.Event", "tc.stream", "tc.graph"),
    ]
)
API_MISUSES = st.sampled_from(
    ["{ev}{gap}(enable_timings=True)", "{ctx}{gap}()", "torch.cuda.event{gap}()", "{ev}{gap}(True, False, False, True, 1)"]
)
WAITS = st.sampled_from(["e.wait()", "e .wait()", "s.wait_event(e)", "e.synchronize()", "e.\\\n    wait()"])


def _called(callee: str, gap: str) -> str:
    """``callee`` called with ``gap`` before the ``(``, bracketed where the gap needs brackets."""
    if gap == ")":
        return f"({callee}"
    if "\n" in gap and "\\" not in gap:
        return f"({callee}"  # the caller closes it: ``(name\n    )(...)`` is a call too
    return callee


@st.composite
def stream_api_programs(draw) -> str:
    imports, ev, ctx, cap = draw(API_IMPORTS)
    lines = ["import torch", imports, "", "def f(x, g):"]
    for _ in range(draw(st.integers(1, 3))):
        gap = draw(CALL_GAPS)
        misuse = draw(API_MISUSES)
        callee, args = misuse.split("{gap}")
        callee = callee.format(ev=ev, ctx=ctx)
        opened = _called(callee, gap)
        closing = ")" if opened != callee else ""
        spacer = gap if gap != ")" else ""
        lines.append(f"    y = {opened}{spacer}{closing}{args}".replace("\n", "\n    "))
    if draw(st.booleans()):
        gap = draw(CALL_GAPS)
        opened = _called(cap, gap)
        closing = ")" if opened != cap else ""
        spacer = gap if gap != ")" else ""
        call = f"{opened}{spacer}{closing}(g)".replace("\n", "\n    ")
        lines += [f"    with {call}:", "        y = x * 2", "        torch.cuda.synchronize()"]
    if draw(st.booleans()):
        lines += [f"    e = {ev}()", "    s = torch.cuda.Stream()", f"    {draw(WAITS)}".replace("\n", "\n    ")]
    if draw(st.booleans()):
        lines += ["    for _ in range(4):", "        s = torch.cuda.Stream()", "        with torch.cuda.stream(s):", "            x.mul_(2)"]
    return "\n".join(lines) + "\n"


@GENERATED
@given(stream_api_programs())
def test_generated_stream_api_spellings_lint_identically(source):
    assert_generated_same(source)


def test_stream_api_generator_reaches_its_rules():
    """Guard against a vacuous property: the awkward spellings do produce findings."""
    cases = {
        "SYN501": "import torch\nEv = torch.cuda.Event\n\ndef f():\n    return (Ev  # why\n    )(enable_timings=True)\n",
        "SYN502": "import torch\ncap = torch.cuda.graph\n\ndef f(g, x):\n    with (cap\n    )(g):\n        torch.cuda.synchronize()\n",
        "SYN204": "import torch\n\ndef f():\n    e = torch.cuda.Event()\n    e.\\\n        wait()\n",
    }
    assert_reported(*cases.items())


def test_call_and_alias_scans():
    import ast

    from synclint.astscan import bound_names, may_call

    stream = frozenset({"Stream"})
    calls = [
        "torch.cuda.Stream()",
        "s = (torch.cuda.Stream)()",
        "s = torch.cuda.Stream \\\n    ()",
        "f(torch.cuda.Stream  # why\n  (), 1)",
        "x = 'Stream('",  # a string that looks like a call only keeps the file
    ]
    for text in calls:
        assert may_call(text, stream), text
    for text in ["MyStream()", "x.Streams()", "s: torch.cuda.Stream = make()", "Stream"]:
        assert not may_call(text, stream), text
    aliased = (
        "from torch.cuda import (\n    Stream  # pooled\n    as S,\n)\n"
        "def f():\n    import torch.cuda.Stream as T\n"
        "U = torch.cuda.Stream\nV: type = U\nW = X = V\nY = make(U)\n"
    )
    found = bound_names(ast.parse(aliased), aliased, stream)
    assert found == {"Stream", "S", "T", "U", "V", "W", "X"}, found


# Files that mention the words but cannot hold a finding: each was linted by libcst and the model
# before the rules' call-aware gates, and now the prefilter answers it alone.
NOT_STREAM_CODE = {
    # vLLM's servers: a `stream` flag and `asyncio` events, no stream API called (SYN501).
    "flag": "import asyncio\n\nasync def serve(request, stream: bool = False, done: asyncio.Event = None):\n"
    "    if request.stream or stream:\n        return {'event': 'done'}\n",
    # `StreamingResponse` built in a loop is not a CUDA stream (SYN105).
    "streaming": "from starlette import StreamingResponse\n\ndef f(items):\n"
    "    for item in items:\n        yield StreamingResponse(item)\n",
    # `await` contains `wait`; no event or work handle is waited on (SYN201).
    "await": "async def f(queue, y):\n    x = y.pin_memory()\n    await queue.put(x)\n",
    # `Event` and `await` again, with a synchronize that is not a method (SYN204).
    "asyncio": "import asyncio\n\nasync def f(ready: asyncio.Event, synchronize):\n"
    "    await synchronize(ready)\n",
    # A `with` over a call, and a `graph` that is not the capture context (SYN502).
    "graph": "def load(path):\n    with open(path) as handle:\n        graph = handle.read()\n    return graph\n",
}


@pytest.mark.parametrize("name", sorted(NOT_STREAM_CODE))
def test_words_without_stream_calls_skip_the_model(name):
    from synclint.pipeline import prefiltered

    text = NOT_STREAM_CODE[name]
    assert prefiltered(text, f"{name}.py", EVERY_RULE.codes) is not None, name
    assert assert_same(text, f"{name}.py") == []


# -- host clocks: two readings in one scope, however spelled and wherever bound --------------------

# (imports and module-level set-up, one reading)
CLOCK_SPELLINGS = st.sampled_from(
    [
        ("import time", "time.perf_counter()"),
        ("import time", "time . time ()"),
        ("import time", "(time.time)()"),
        ("import time", "(time.\n    # moved\n    perf_counter)()"),
        ("import time", "time.\\\n    monotonic()"),
        ("from time import perf_counter as pc", "pc()"),
        ("from time import time", "time()"),
        ("import time\nnow = time.perf_counter", "now()"),
        ("import time as t", "t.time()"),
        ("import timeit", "timeit.default_timer()"),
    ]
)
CLOCK_LAYOUTS = st.sampled_from(["function", "split", "module", "local alias", "attribute alias"])


@st.composite
def clock_programs(draw) -> str:
    imports, reading = draw(CLOCK_SPELLINGS)
    layout = draw(CLOCK_LAYOUTS)
    work = ["x = torch.zeros(8, device='cuda')", "y = x @ x"]
    if layout == "local alias":
        # the reading's callee bound to a local name first (any clock: the name is what counts)
        prefix = ["clock = time.perf_counter"] if "import time" in imports else []
        imports = imports if prefix else imports + "\nimport time"
        prefix = prefix or ["clock = time.perf_counter"]
        reading = "clock()"
    if layout == "attribute alias":
        lines = [
            "import torch",
            imports if "import time" in imports.split("\n")[0] else imports + "\nimport time",
            "",
            "class Timer:",
            "    def __init__(self):",
            "        self.clock = time.time",
            "",
            "    def run(self):",
            "        t0 = self.clock()",
            *("        " + w for w in work),
            "        t1 = self.clock()",
            "        return t1 - t0",
        ]
        return "\n".join(lines) + "\n"
    indented = reading.replace("\n", "\n    ")
    if layout == "module":
        body = [f"t0 = {reading}", *work, f"t1 = {reading}", "print(t1 - t0)"]
        return "\n".join(["import torch", imports, "", *body]) + "\n"
    if layout == "split":  # one reading in each function: nothing for SYN205 to pair
        body = [
            "def start():",
            f"    return {indented}",
            "",
            "def stop():",
            *("    " + w for w in work),
            f"    return {indented}",
        ]
        return "\n".join(["import torch", imports, "", *body]) + "\n"
    lines = ["import torch", imports, "", "def f():"]
    if layout == "local alias":
        lines += ["    " + p for p in prefix]
    lines += [f"    t0 = {indented}", *("    " + w for w in work), f"    t1 = {indented}"]
    lines.append("    return t1 - t0")
    return "\n".join(lines) + "\n"


@GENERATED
@given(clock_programs())
def test_generated_clock_readings_lint_identically(source):
    assert_generated_same(source)


def test_clock_generator_reaches_its_rule():
    """Guard against a vacuous property: readings paired in one scope are SYN205, also when the
    clock is called through a local alias or at module level."""
    alias = (
        "import torch\nimport time\n\ndef f():\n    clock = time.perf_counter\n"
        "    t0 = clock()\n    x = torch.zeros(8, device='cuda')\n    y = x @ x\n"
        "    t1 = clock()\n    return t1 - t0\n"
    )
    module = (
        "import torch\nfrom time import perf_counter as pc\n\nt0 = pc()\n"
        "x = torch.zeros(8, device='cuda')\ny = x @ x\nt1 = pc()\nprint(t1 - t0)\n"
    )
    assert_reported(("SYN205", alias), ("SYN205", module))


def test_one_reading_per_function_skips_the_model():
    """Timestamps and timeouts: ``time`` imported and read once per function, around CUDA work
    (each was linted by the model before SYN205 counted readings per scope)."""
    from synclint.pipeline import prefiltered

    text = (
        "import time\nimport torch\n\n\ndef upload(x):\n    started = time.time()\n"
        "    # sleep a little\n    time.sleep(0.1)\n    return x.cuda(), started\n\n\n"
        "def download(x):\n    y = x.cpu()\n    return y, time.monotonic()\n"
    )
    assert prefiltered(text, "stamps.py", EVERY_RULE.codes) is not None
    assert assert_same(text, "stamps.py") == []


def _statements_as_before(tree):
    """The statement walk as it was written before the table by type: the oracle."""
    stack = list(getattr(tree, "body", ()))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if block:
                stack.extend(block)


def test_statement_walk_is_the_one_before_the_table():
    """``iter_statements`` finds each node's blocks from a table by type: the same statements,
    in the same order, as asking every node for every block field."""
    from synclint.astscan import iter_statements

    fixtures = (ROOT / "fixtures").rglob("*.py")
    sources = [p.read_text(encoding="utf-8", errors="replace") for p in fixtures]
    sources += [  # one construct each: `except*` (3.11) must not hide the others on 3.10
        "async def f():\n    async with a:\n        async for x in y:\n            pass\n"
        "        else:\n            z = 1\n",
        "try:\n    pass\nexcept* ValueError:\n    x = 1\nelse:\n    y = 2\nfinally:\n    z = 3\n",
        "match p:\n    case [a]:\n        b = 1\n"
        "    case _:\n        class C:\n            d = 2\n",
        "while t:\n    if a:\n        pass\n    elif b:\n        q = 1\n    else:\n        r = 2\n",
    ]
    checked = 0
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        assert list(iter_statements(tree)) == list(_statements_as_before(tree))
        for node in ast.walk(tree):
            if isinstance(node, (ast.stmt, ast.excepthandler, ast.match_case)):
                assert list(iter_statements(node)) == list(_statements_as_before(node))
        checked += 1
    assert checked > 100


def _imports_module(tree, modules) -> bool:
    """Is one of ``modules`` imported anywhere in ``tree``? (What the walk needs no text for.)"""
    for node in ast.walk(tree):
        if type(node) is ast.Import and any(a.name.split(".")[0] in modules for a in node.names):
            return True
        if type(node) is ast.ImportFrom and (
            (node.module or "").split(".")[0] in modules
            or any(a.name in modules for a in node.names)
        ):
            return True
    return False


_TIME_PIECES = [
    "x = time.time()",
    "y = self.time.sleep(1)",
    "z = obj. time.x",
    "w = (obj.\n     time.x)",
    "v = (obj.  # note\n     time.x)",
    "u = obj.\\\n    time.x",
    'm = f"{time.monotonic()}"',
    's = "time.now"',
    "# time.sleep(1)",
    "from .time import a",
    "import time",
    "from time import perf_counter",
    "time = 3",
    "def time(): pass",
    "k = f(time=1)",
    "q = runtime.x + time_s.y",
    "class T:\n    time = 1\n    def m(self):\n        return self.time.x",
]


@GENERATED
@given(st.lists(st.sampled_from(_TIME_PIECES), min_size=1, max_size=6))
def test_bare_name_text_check_changes_nothing(pieces):
    """The text check that spares the walk for a bare ``time`` (every occurrence follows a
    ``.``: an attribute) must give what the walk gives: an import, or ``time.`` in the text and
    a bare name ``time`` in the tree."""
    from synclint.astscan import imports_or_names_module

    source = "\n".join(pieces) + "\n"
    tree = ast.parse(source)
    modules = frozenset({"time", "timeit"})
    expected = _imports_module(tree, modules) or (
        any(re.search(rf"{m}(?<!\w{m})\s*\.", source) for m in modules)
        and any(type(n) is ast.Name and n.id in modules for n in ast.walk(tree))
    )
    assert imports_or_names_module(tree, modules, source) == expected, source
