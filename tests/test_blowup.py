"""Pathological inputs must analyse in bounded time.

A flow-sensitive analysis can blow up on shapes real code does have: enumerating paths through
sequential branches is exponential, happens-before closures over thousands of streams are cubic,
recursive visitors die on long expression chains. Each case below is large enough that exponential
(or badly super-linear) behaviour would take minutes or hit the recursion limit, while a sound linear
or near-linear analysis takes well under a second. The bound is generous (shared, noisy CI machines);
it is there to catch blow-ups, not to measure speed.

Nesting beyond what CPython accepts is a different failure: libcst's native parser overflows its
stack on it (a segmentation fault), so such files must get SYN001 without reaching libcst
(``test_nesting_cpython_refuses_is_syn001_not_a_crash``).

Every rule is enabled, including the ones off by default, and each source is checked to be valid
Python first so that a SYN001 short-cut cannot make a case pass.

The bound is relative, so that a loaded machine does not fail it: each case is timed against a
baseline of the same number of lines spread over small, ordinary stream functions, linted in the same
process just before. A linear analysis takes about as long on both; the case may take
``RATIO`` times the baseline (plus a floor for small inputs), which polynomial blow-ups of any
degree above one, and exponential ones, exceed by far at these sizes.
"""

from __future__ import annotations

import ast
import time

import pytest

from synclint.engine import lint_source
from synclint.rules.registry import all_rules

RATIO = 15.0
FLOOR_SECONDS = 5.0

PRELUDE = "import torch\n\n"


def indent(lines: list[str], depth: int = 1) -> list[str]:
    return ["    " * depth + line for line in lines]


def long_function(statements: int = 5_000) -> str:
    """One function of thousands of statements, with stream traffic throughout."""
    body = ["s = torch.cuda.Stream()", "x = torch.zeros(8, device='cuda')"]
    for i in range(statements // 5):
        body += [
            f"y{i} = x * {i}",
            "with torch.cuda.stream(s):",
            f"    x = y{i} + 1",
            "torch.cuda.current_stream().wait_stream(s)",
            f"print(x.sum().item() + {i})",
        ]
    return PRELUDE + "def f():\n" + "\n".join(indent(body)) + "\n"


def deep_if_nesting(depth: int = 90) -> str:
    """``if`` blocks nested 90 deep (CPython's tokenizer allows 100 indentation levels; ``if`` does
    not count towards its limit of 20 nested loop/``with``/``try`` blocks)."""
    lines = ["s = torch.cuda.Stream()", "x = torch.ones(4, device='cuda')"]
    for level in range(depth):
        lines.append("    " * level + f"if x.numel() > {level}:")
        lines.append(
            "    " * (level + 1) + "with torch.cuda.stream(s):"
            if level % 10 == 9
            else "    " * (level + 1) + f"x = x + {level}"
        )
        if level % 10 == 9:
            lines.append("    " * (level + 2) + f"x = x * {level}")
    lines.append("    " * depth + "print(x.sum().item())")
    return PRELUDE + "def f():\n" + "\n".join(indent(lines)) + "\n"


def deep_expression(depth: int = 100) -> str:
    """Parenthesised calls nested 100 deep, and a 1,000-term binary chain (left-nested tree)."""
    nested = "x"
    for i in range(depth):
        nested = f"torch.add({nested}, {i})"
    chain = " + ".join(f"x{i % 7}" for i in range(1_000))
    return PRELUDE + (
        "def f(x0, x1, x2, x3, x4, x5, x6):\n"
        "    s = torch.cuda.Stream()\n"
        "    x = x0\n"
        "    with torch.cuda.stream(s):\n"
        f"        y = {nested}\n"
        f"    z = {chain}\n"
        "    return y + z\n"
    )


def many_streams_and_events(count: int = 3_000) -> str:
    """Thousands of streams and events with a chain of happens-before edges between them."""
    lines = ["x = torch.zeros(8, device='cuda')"]
    for i in range(count):
        lines += [
            f"s{i} = torch.cuda.Stream()",
            f"e{i} = torch.cuda.Event(enable_timing=True)",
        ]
    for i in range(count):
        lines += [
            f"with torch.cuda.stream(s{i}):",
            f"    x = x + {i}",
            f"    e{i}.record()",
            f"s{(i + 1) % count}.wait_event(e{i})",
        ]
    lines.append("print(x.sum().item())")
    return PRELUDE + "def f():\n" + "\n".join(indent(lines)) + "\n"


def sequential_branches(count: int = 60) -> str:
    """60 independent ``if`` statements in a row: 2**60 paths for a path-enumerating analysis."""
    lines = ["s = torch.cuda.Stream()", "x = torch.zeros(8, device='cuda')"]
    for i in range(count):
        lines += [
            f"if flags[{i}]:",
            "    with torch.cuda.stream(s):",
            f"        x = x + {i}",
            f"if flags[{i} + 1]:",
            "    torch.cuda.current_stream().wait_stream(s)",
        ]
    lines.append("print(x.sum().item())")
    return PRELUDE + "def f(flags):\n" + "\n".join(indent(lines)) + "\n"


def long_elif_chain(count: int = 1_000) -> str:
    lines = [
        "s = torch.cuda.Stream()",
        "e = torch.cuda.Event()",
        "x = torch.zeros(8, device='cuda')",
    ]
    for i in range(count):
        keyword = "if" if i == 0 else "elif"
        lines += [f"{keyword} mode == {i}:"]
        lines += (
            ["    with torch.cuda.stream(s):", f"        x = x * {i}", "        e.record()"]
            if i % 2
            else ["    e.wait()", f"    x = x - {i}"]
        )
    lines += ["else:", "    torch.cuda.synchronize()", "print(x.sum().item())"]
    return PRELUDE + "def f(mode):\n" + "\n".join(indent(lines)) + "\n"


def nested_loops(depth: int = 15) -> str:
    """Loops nested 15 deep (CPython allows 20 nested blocks): fixpoints must not multiply."""
    lines = ["s = torch.cuda.Stream()", "x = torch.zeros(8, device='cuda')"]
    for level in range(depth):
        lines.append("    " * level + f"for i{level} in range(n):")
        lines.append("    " * (level + 1) + "with torch.cuda.stream(s):")
        lines.append("    " * (level + 2) + f"x = x + i{level}")
        lines.append(
            "    " * (level + 1)
            + (
                "torch.cuda.current_stream().wait_stream(s)"
                if level % 2
                else f"y{level} = x.to('cpu', non_blocking=True)"
            )
        )
    lines.append("print(x.sum().item())")
    return PRELUDE + "def f(n):\n" + "\n".join(indent(lines)) + "\n"


def many_functions(count: int = 2_000) -> str:
    """A module of thousands of small stream functions: cost must be per function, not squared."""
    parts = [PRELUDE]
    for i in range(count):
        parts.append(
            f"def f{i}(x):\n"
            "    s = torch.cuda.Stream()\n"
            "    with torch.cuda.stream(s):\n"
            f"        y = x * {i}\n"
            "    return y\n\n"
        )
    return "".join(parts)


def try_ladder(count: int = 300) -> str:
    lines = ["s = torch.cuda.Stream()", "x = torch.zeros(8, device='cuda')"]
    for i in range(count):
        lines += [
            "try:",
            "    with torch.cuda.stream(s):",
            f"        x = x + {i}",
            "except RuntimeError:",
            "    torch.cuda.synchronize()",
            "finally:",
            f"    z{i} = x.cpu()",
        ]
    return PRELUDE + "def f():\n" + "\n".join(indent(lines)) + "\n"


CASES = {
    "long_function": long_function,
    "deep_if_nesting": deep_if_nesting,
    "deep_expression": deep_expression,
    "many_streams_and_events": many_streams_and_events,
    "sequential_branches": sequential_branches,
    "long_elif_chain": long_elif_chain,
    "nested_loops": nested_loops,
    "many_functions": many_functions,
    "try_ladder": try_ladder,
}


def baseline(lines: int) -> str:
    """``lines`` lines of small, ordinary stream functions: what a linear analysis costs per line."""
    chunk = (
        "def g{i}(x):\n"
        "    s = torch.cuda.Stream()\n"
        "    s.wait_stream(torch.cuda.current_stream())\n"
        "    with torch.cuda.stream(s):\n"
        "        y = x * {i}\n"
        "    torch.cuda.current_stream().wait_stream(s)\n"
        "    return y\n\n"
    )
    return PRELUDE + "".join(chunk.format(i=i) for i in range(max(1, lines // 8)))


def timed_lint(source: str, name: str, codes: set[str]) -> tuple[float, list]:
    start = time.perf_counter()
    diagnostics = lint_source(source, path=f"{name}.py", codes=codes)
    return time.perf_counter() - start, diagnostics


@pytest.mark.parametrize("name", sorted(CASES))
def test_pathological_input_lints_in_bounded_time(name):
    source = CASES[name]()
    ast.parse(source)  # the case is valid Python: a SYN001 short-cut cannot make it pass
    codes = set(all_rules())
    reference, _ = timed_lint(baseline(source.count("\n")), "baseline", codes)
    elapsed, diagnostics = timed_lint(source, name, codes)
    bound = FLOOR_SECONDS + RATIO * reference
    assert elapsed < bound, f"{name}: {elapsed:.1f}s, baseline of as many lines {reference:.2f}s"
    # lint_source raises when a rule crashes (RecursionError included), so reaching this line means
    # every rule finished; and the input was not dismissed as unparsable either.
    assert not [d for d in diagnostics if d.code == "SYN001"]


NESTED_BEYOND_CPYTHON = {
    # CPython's tokenizer refuses more than 200 nested brackets; libcst's native parser overflows
    # its stack (a segmentation fault, no exception) from about 2,000.
    "brackets": "x = " + "[" * 5_000 + "]" * 5_000 + "\n",
    "calls": "import torch\nx = " + "torch.cuda.synchronize(" * 3_000 + ")" * 3_000 + "\n",
    # CPython's parser gives up (MemoryError) before libcst's crashes, from about 3,500 lambdas.
    "lambdas": "x = " + "lambda: " * 4_000 + "1\n",
}


@pytest.mark.parametrize("name", sorted(NESTED_BEYOND_CPYTHON))
def test_nesting_cpython_refuses_is_syn001_not_a_crash(name, tmp_path):
    """Run in a child process: without the guard the crash would take pytest down with it."""
    import json
    import subprocess
    import sys

    path = tmp_path / f"{name}.py"
    path.write_text(NESTED_BEYOND_CPYTHON[name])
    run = subprocess.run(
        [sys.executable, "-m", "synclint", "check", "--no-cache", "--output-format", "json", str(path)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    found = json.loads(run.stdout)
    assert [(d["code"], d["filename"]) for d in found] == [("SYN001", str(path))]
    assert "nested" in found[0]["message"]
    # the same without the prefilter (the engine's own path), in this process
    assert [d.code for d in lint_source(NESTED_BEYOND_CPYTHON[name], path="x.py")] == ["SYN001"]
