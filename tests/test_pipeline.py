"""The per-file pipeline: the text prefilter never changes results; parallel equals serial."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from frame_helpers import ROOT, write

from synclint.engine import default_codes, lint_source
from synclint.pipeline import FileSettings, lint_text, prefiltered
from synclint.rules.registry import all_rules

CORPUS = sorted(
    [
        *(ROOT / "fixtures").rglob("*.py"),
        *(ROOT / "examples").rglob("*.py"),
        *(ROOT / "synclint").rglob("*.py"),
    ]
)
EVERY_RULE = FileSettings(frozenset(all_rules()))


@pytest.mark.parametrize("path", CORPUS, ids=[str(p.relative_to(ROOT)) for p in CORPUS])
def test_prefilter_never_changes_results(path: Path):
    text = path.read_text(encoding="utf-8")
    with_filter = lint_text(text, "f.py", EVERY_RULE, prefilter=True).diagnostics
    without = lint_text(text, "f.py", EVERY_RULE, prefilter=False).diagnostics
    assert with_filter == without


def test_prefilter_skips_files_without_triggers_but_not_syntax_errors():
    assert prefiltered("x = 1\n", "f.py", default_codes()) is not None
    assert prefiltered("x = (\n", "f.py", default_codes()) is None
    result = lint_text("x = (\n", "f.py", FileSettings(default_codes()))
    assert [d.code for d in result.diagnostics] == ["SYN001"]


def test_files_without_triggers_are_checked_without_building_a_tree(monkeypatch):
    import synclint.pipeline as pipeline

    parsed = []
    original = pipeline.python_parse
    monkeypatch.setattr(pipeline, "python_parse", lambda text, path: parsed.append(path) or original(text, path))
    assert prefiltered("x = 1\n", "clean.py", default_codes()) is not None
    assert parsed == []  # CPython's symbol table said it parses: no ast was built
    # The symbol table rejects what the parser accepts (and libcst too): the ast decides then.
    for text in ("nonlocal x\n", "def f(a, a):\n    pass\n"):
        assert prefiltered(text, "odd.py", default_codes()) is not None  # it parses: no SYN001
        assert lint_text(text, "odd.py", FileSettings(default_codes()), prefilter=False).diagnostics == []
    assert parsed == ["odd.py", "odd.py"]
    assert prefiltered("x = (\n", "broken.py", default_codes()) is None


def test_a_rule_without_triggers_disables_the_prefilter(fake_rules, monkeypatch):
    from frame_helpers import MarkerRule

    from synclint.pipeline import _triggers_for

    monkeypatch.setattr(MarkerRule, "triggers", ())
    _triggers_for.cache_clear()
    codes = frozenset({"SYN901"})
    assert prefiltered("x = 1\n", "f.py", codes) is None


def test_lint_source_raises_on_a_crashing_rule(fake_rules):
    with pytest.raises(RuntimeError, match="rule SYN903 crashed"):
        lint_source("boom()\n", "t.py", {"SYN903"})


def test_parallel_equals_serial(project, fake_rules):
    from synclint.runner import Job, run_jobs

    jobs = []
    for index in range(40):
        path = write(
            project / f"f{index:02d}.py", "marker()\n" * (index % 3) + "x = (\n" * (index % 5 == 0)
        )
        jobs.append(Job(str(path), path.name, FileSettings(frozenset({"SYN001", "SYN901"}))))
    serial = run_jobs(jobs, parallel=False)
    parallel = run_jobs(list(reversed(jobs)), parallel=True)
    assert [(r.path, r.diagnostics) for r in serial] == [(r.path, r.diagnostics) for r in parallel]
    # A file that does not parse has SYN001 only; the others one SYN901 per marker() call.
    expected = sum(1 if i % 5 == 0 else i % 3 for i in range(40))
    assert sum(len(r.diagnostics) for r in serial) == expected


def test_parsing_without_validation_gives_libcst_s_tree_and_restores_the_hook():
    import libcst as cst

    from synclint.engine import parse_module

    hook = cst.CSTNode.__dict__["__post_init__"]
    for path in sorted((ROOT / "fixtures").rglob("*.py"))[:40]:
        text = path.read_text(encoding="utf-8")
        assert parse_module(text).deep_equals(cst.parse_module(text)), path
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("x = (\n")
    assert cst.CSTNode.__dict__["__post_init__"] is hook
    with pytest.raises(cst.CSTValidationError):  # hand-built nodes are still validated
        cst.Name("not a name")


CRASHING_RUN = """
import os, sys, json
sys.path.insert(0, sys.argv[2])
from frame_helpers import MarkerRule
from synclint.pipeline import FileSettings, _triggers_for
from synclint.rules.registry import all_rules
from synclint.runner import Job, run_jobs

class Explodes(MarkerRule):
    code = "SYN903"
    triggers = ("explode",)

    def check(self, ctx):
        if "explode()" in ctx.source:
            os.abort()  # a crash outside Python, as a native parser's stack overflow is
        return iter(())

all_rules()["SYN901"], all_rules()["SYN903"] = MarkerRule, Explodes
_triggers_for.cache_clear()
root = sys.argv[1]
jobs = []
for index in range(40):
    path = os.path.join(root, f"f{index:02d}.py")
    with open(path, "w") as out:
        out.write("explode()\\n" if index == 7 else "marker()\\n")
    jobs.append(Job(path, f"f{index:02d}.py", FileSettings(frozenset({"SYN901", "SYN903"}))))
results = run_jobs(jobs, parallel=True)
print(json.dumps([(r.path, [d.code for d in r.diagnostics], r.errors) for r in results]))
"""


def test_a_worker_that_dies_costs_its_file_not_the_run(tmp_path):
    """A worker killed by a crash outside Python (or by the system) must not take the run down:
    the file it was linting gets an error, every other file is linted. In a child process, since
    without this the retry would crash the process that runs it."""

    run = subprocess.run(
        [sys.executable, "-c", CRASHING_RUN, str(tmp_path), str(Path(__file__).parent)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    results = {path: (codes, errors) for path, codes, errors in json.loads(run.stdout)}
    assert len(results) == 40
    codes, errors = results.pop("f07.py")
    assert codes == [] and len(errors) == 1 and "died" in errors[0]
    assert all(codes == ["SYN901"] and not errors for codes, errors in results.values())
