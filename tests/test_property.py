"""Property tests: the whole per-file pipeline (decode, prefilter, parse, every registered rule,
suppressions, SYN002, fixes) never raises, whatever the input."""

from __future__ import annotations

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synclint.engine import default_codes
from synclint.fixer import fix_text
from synclint.pipeline import FileSettings, lint_bytes, lint_text
from synclint.rules.registry import all_rules

EVERY_RULE = FileSettings(frozenset(all_rules()))
QUICK = settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))


def check_text(text: str) -> None:
    result = lint_text(text, "prop.py", EVERY_RULE)
    assert not result.errors, result.errors  # a rule crash is a bug, even on odd code
    for d in result.diagnostics:
        assert d.span.start.line >= 1 and d.span.start.column >= 1


# hypothesmith compiles what it generates: CPython warns about its odd code (`1 is not 2`)
@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@QUICK
@given(hypothesmith.from_grammar())
def test_grammar_generated_programs(source):
    check_text(source)


# hypothesmith compiles what it generates: CPython warns about its odd code (`1 is not 2`)
@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@QUICK
@given(hypothesmith.from_node())
def test_cst_generated_programs(source):
    check_text(source)


@QUICK
@given(st.binary(max_size=2000))
def test_random_bytes(data):
    result = lint_bytes(data, "prop.py", EVERY_RULE)
    assert not result.errors


STREAMISH = st.sampled_from(
    [
        "import torch\n",
        "s = torch.cuda.Stream()\n",
        "with torch.cuda.stream(s):\n",
        "    y = x.cuda(non_blocking=True)\n",
        "z = y + 1\n",
        "e = torch.cuda.Event()\n",
        "e.record()\n",
        "e.wait()\n",
        "torch.cuda.current_stream().wait_stream(s)\n",
        "def f(x):\n",
        "    return x\n",
        "for i in range(3):\n",
        "    pass\n",
        "del y\n",
        "  # noqa: SYN101\n",
        "# synclint: ignore[SYN102]\n",
        "if z:\n",
        "else:\n",
        "(\n",
        "\t",
        "'''",
    ]
)


@QUICK
@given(st.lists(STREAMISH, max_size=25).map("".join))
def test_stream_flavoured_fragments_and_fixes(text):
    check_text(text)
    settings_ = FileSettings(default_codes() | {"SYN002"})
    outcome = fix_text(text, lambda t: lint_text(t, "prop.py", settings_).diagnostics, unsafe=True)
    if outcome.applied:
        import libcst as cst

        cst.parse_module(outcome.text)  # fixes never leave code that does not parse


@QUICK
@given(st.text(max_size=500))
def test_random_text(text):
    check_text(text)
