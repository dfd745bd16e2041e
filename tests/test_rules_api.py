"""SYN501/SYN502 edge cases, name resolution, and the rule pages of the SYN2xx/3xx/5xx families."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from test_rule_pages import SECTIONS

from synclint.engine import lint_source
from synclint.rules.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
MY_CODES = [c for c in all_rules() if c[:4] in {"SYN2", "SYN3", "SYN5"}]


def codes(source: str) -> list[tuple[int, str]]:
    return [(d.span.start.line, d.code) for d in lint_source(textwrap.dedent(source))]


def test_event_names_resolve_through_imports_only() -> None:
    # ``Event`` imported from threading is not a CUDA event: no keyword check.
    assert codes("from threading import Event\ne = Event(enable_timings=True)\n") == []
    assert codes("import torch.cuda as tc\ne = tc.Event(enable_timings=True)\n") == [(2, "SYN501")]
    assert codes("import torch as T\ne = T.cuda.Event(enable_timings=True)\n") == [(2, "SYN501")]


def test_accelerator_wrapper_is_configurable() -> None:
    from synclint.settings import AnalysisSettings

    source = "from mylib import accel\ns = accel().Stream(priorty=1)\n"
    assert lint_source(source) == []
    found = lint_source(source, settings=AnalysisSettings(accelerator_wrappers=("mylib.accel",)))
    assert [d.code for d in found] == ["SYN501"]


def test_unknown_keyword_message_names_the_valid_ones() -> None:
    (d,) = lint_source("import torch\ne = torch.cuda.Event(enable_timings=True)\n")
    assert "`enable_timing`" in d.message and "did you mean" in d.message
    assert d.data["keyword"] == "enable_timings"


def test_generic_stream_with_too_many_arguments_is_reported_once() -> None:
    # `torch.Stream` takes one positional argument or three: six is one mistake, one finding.
    found = lint_source("import torch\ns = torch.Stream(1, 2, 3, 4, 5, 6)\n")
    assert [(d.code, d.message.split(";")[0]) for d in found] == [
        ("SYN501", "`Stream` takes one positional argument (device) or three (stream_id, "
         "device_index, device_type), not 6")
    ]
    assert codes("import torch\ns = torch.Stream(1, 2, 3, priority=-1)\n") == []


def test_graph_capture_checks_only_the_captured_region() -> None:
    found = codes(
        """
        import torch
        def f(g, fn, x):
            torch.cuda.synchronize()
            with torch.cuda.graph(g):
                y = fn(x)
                torch.cuda.synchronize()
            torch.cuda.synchronize()
            return y.item()
        """
    )
    assert found == [(7, "SYN502")]


def test_graph_context_must_resolve_to_torch() -> None:
    assert (
        codes(
            "from mylib import graph\nimport torch\nwith graph(g):\n    torch.cuda.synchronize()\n"
        )
        == []
    )


@pytest.mark.parametrize("code", MY_CODES)
def test_rule_page_examples(code: str) -> None:
    page = ROOT / "rules" / f"{code}.md"
    assert page.exists(), f"rules/{code}.md is missing"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# {code}: {all_rules()[code].name}\n")
    sections = re.findall(r"^## (.+)$", text, re.M)
    assert sections == SECTIONS
    example, use_instead = re.findall(r"```python\n(.*?)```", text, re.S)
    assert code in {d.code for d in lint_source(example)}
    assert code not in {d.code for d in lint_source(use_instead)}


@pytest.mark.parametrize("code", MY_CODES)
def test_rule_has_fixtures(code: str) -> None:
    folder = ROOT / "fixtures" / code
    assert len(list(folder.glob("bad_*.py"))) >= 8
    assert len(list(folder.glob("ok_*.py"))) >= 8


@pytest.mark.parametrize("code", MY_CODES)
def test_triggers_are_necessary(code: str) -> None:
    """Every bad fixture contains one of the rule's triggers (else the prefilter would skip it)."""
    rule = all_rules()[code]
    assert rule.triggers
    for path in (ROOT / "fixtures" / code).glob("bad_*.py"):
        text = path.read_text(encoding="utf-8")
        assert any(t in text for t in rule.triggers), path.name


def test_one_finding_per_code_place_and_message(monkeypatch) -> None:
    """A hazard reached along two paths (its last reference dying at a block's end and at the
    return) is reported once, with the notes of the first path."""
    from synclint import engine
    from synclint.rules.base import Rule
    from synclint.settings import AnalysisSettings

    class Twice(Rule):
        code, name, summary, triggers = "SYN102", "stub", "stub", ("x",)

        def check(self, ctx):
            node = ctx.module.body[0]
            yield ctx.diagnostic(self, node, "same message", related=[(node, "one path")])
            yield ctx.diagnostic(self, node, "same message", related=[(node, "another path")])
            yield ctx.diagnostic(self, node, "another message")

    monkeypatch.setattr(engine, "all_rules", lambda: {"SYN102": Twice})
    source = "x = 1\n"
    found = engine.run_rules(
        "x.py", source, engine.parse_module(source), ["SYN102"], AnalysisSettings()
    )
    assert [(d.message, [r.message for r in d.related]) for d in found] == [
        ("another message", []),
        ("same message", ["one path"]),
    ]
