"""Planning: which findings run, what runs, which lines are delayed and synchronized."""

from __future__ import annotations

from pathlib import Path

import pytest

from synclint.confirm.plan import EntryError, parse_entry, plan_finding
from synclint.confirm.report import diagnostic_from_json
from synclint.diagnostics import Diagnostic, Position, Span

from confirm_helpers import TWINS


def finding(path: Path, line: int, code: str = "SYN101", data=None, related=()) -> Diagnostic:
    at = Span(Position(line, 5), Position(line, 20))
    return Diagnostic(code, "m", str(path), at, tuple(related), data=data or {})


def marker_plan(twins, name: str):
    (item,) = twins.marker_findings(TWINS / name)
    return plan_finding(diagnostic_from_json(item, 0, Path.cwd()))


def test_every_buggy_twin_has_a_fixed_twin_with_the_same_line_count(twins) -> None:
    pairs = twins.pairs()
    assert {b.name.split("_")[0] for b, _ in pairs} >= {
        "syn101", "syn102", "syn103", "syn201", "syn202", "syn203", "syn301", "syn304", "syn502",
    }
    for buggy, fixed in pairs:
        assert fixed.exists(), fixed
        assert len(buggy.read_text().splitlines()) == len(fixed.read_text().splitlines())


def test_syn101_delays_the_first_access_and_synchronizes_both(twins) -> None:
    plan = marker_plan(twins, "syn101_buggy.py")
    assert plan.executable and plan.methods == ("sanitizer", "delay")
    assert plan.target.kind == "function" and plan.target.function == "main"
    assert plan.first == (10, 10) and plan.second == (13, 13)
    assert plan.delay == ((10, 10),) and plan.sync_after == ((10, 10), (13, 13))


def test_syn101_uses_the_stream_the_finding_names(tmp_path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import torch\n\ndef main():\n    x = 1\n    y = 2\n")
    data = {"first": {"stream": "self.copy_stream", "line": 4}, "tensor": "x"}
    plan = plan_finding(finding(source, 5, data=data))
    assert plan.delay == ((4, 4),) and plan.delay_stream == "self.copy_stream" and plan.tensor == "x"


def test_syn102_holds_back_the_use_on_the_other_stream(twins) -> None:
    plan = marker_plan(twins, "syn102_buggy.py")
    assert plan.methods == ("lifetime",)
    assert plan.delay == (plan.second,) == ((11, 11),)


def test_host_read_delays_the_non_blocking_copy(twins) -> None:
    plan = marker_plan(twins, "syn301_buggy.py")
    assert plan.methods == ("host-read",) and plan.delay == ((7, 7),)


def test_event_wait_delays_the_copy_and_the_record(twins) -> None:
    plan = marker_plan(twins, "syn201_buggy.py")
    assert plan.methods == ("host-wait",) and plan.delay == ((12, 12), (13, 13))


def test_elapsed_time_before_completion_delays_the_records(twins) -> None:
    plan = marker_plan(twins, "syn203_buggy.py")
    assert plan.methods == ("exception",) and plan.exception_pattern
    assert (11, 11) in plan.delay and (9, 9) in plan.delay


def test_module_level_code_is_run_as_a_module(twins) -> None:
    plan = marker_plan(twins, "syn202_buggy.py")
    assert plan.target.kind == "module" and plan.target.run_name == "__synclint_confirm__"
    assert plan.delay == ()


def test_code_under_a_main_guard_runs_as_main(tmp_path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import torch\nif __name__ == '__main__':\n    x = 1\n    y = 2\n")
    plan = plan_finding(finding(source, 4, data={"first": {"line": 3}}))
    assert plan.target.kind == "module" and plan.target.run_name == "__main__"


@pytest.mark.parametrize(
    "source, words",
    [
        ("def f(a):\n    x = 1\n    y = 2\n", "needs arguments"),
        ("class C:\n    def f(self):\n        x = 1\n        y = 2\n", "is a method"),
        ("def outer():\n    def f():\n        x = 1\n        y = 2\n", "nested function"),
        ("async def f():\n    x = 1\n    y = 2\n", "coroutine"),
    ],
)
def test_code_that_cannot_be_called_alone_is_not_executable(tmp_path, source, words) -> None:
    path = tmp_path / "m.py"
    path.write_text(source)
    last = len(source.splitlines())
    plan = plan_finding(finding(path, last, data={"first": {"line": last - 1}}))
    assert not plan.executable and words in plan.reason and "--entry" in plan.reason


def test_defaults_make_a_function_callable(tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_text("def f(a=1, *, b=2):\n    x = 1\n    y = 2\n")
    assert plan_finding(finding(path, 3, data={"first": {"line": 2}})).executable


def test_an_entry_point_replaces_the_own_target(tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_text("class C:\n    def f(self):\n        x = 1\n        y = 2\n")
    entry = parse_entry("python train.py --steps 2")
    plan = plan_finding(finding(path, 4, data={"first": {"line": 3}}), entry)
    assert plan.executable and plan.target.kind == "script"
    assert plan.target.argv == ("train.py", "--steps", "2")


def test_static_only_rules_are_not_confirmable(tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    plan = plan_finding(finding(path, 1, code="SYN105"))
    assert not plan.executable and plan.reason.startswith("not confirmable")


def test_unreadable_file_is_a_reason_not_a_crash(tmp_path) -> None:
    plan = plan_finding(finding(tmp_path / "missing.py", 3, data={"first": {"line": 2}}))
    assert not plan.executable and "cannot read" in plan.reason


@pytest.mark.parametrize(
    "entry, kind",
    [
        ("python -m pkg.train --fast", "run-module"),
        ("python3 train.py", "script"),
        ("pytest tests/test_x.py -k race", "pytest"),
        ("pkg.module:main", "callable"),
    ],
)
def test_parse_entry(entry, kind) -> None:
    assert parse_entry(entry).kind == kind


@pytest.mark.parametrize("entry", ["", "make train", "python", "python -c 'x'", "'unterminated"])
def test_bad_entries_are_explained(entry) -> None:
    with pytest.raises(EntryError):
        parse_entry(entry)


def test_spec_carries_lines_and_trials(twins) -> None:
    plan = marker_plan(twins, "syn101_buggy.py")
    spec = plan.spec("delay", trials=3, sleep_cycles=1000)
    assert spec["second"] == [13, 13] and spec["first"] == [10, 10] and spec["trials"] == 3
    assert spec["target"]["function"] == "main" and spec["file"].endswith("syn101_buggy.py")


def test_entry_twins_name_their_entry_point_and_need_it(twins) -> None:
    ((bad, good),) = twins.pairs("entry_")
    assert good.exists() and twins.entry_command(bad).endswith("entry_syn101_buggy.py --steps 3")
    (item,) = twins.marker_findings(bad)
    plan = plan_finding(diagnostic_from_json(item, 0, Path.cwd()))
    assert not plan.executable and "is a method" in plan.reason
    entry = parse_entry(twins.entry_command(bad))
    plan = plan_finding(diagnostic_from_json(item, 0, Path.cwd()), entry)
    assert plan.executable and plan.target.kind == "script" and plan.delay == ((18, 18),)


def test_capture_failure_is_confirmed_by_its_exception(twins) -> None:
    plan = marker_plan(twins, "syn502_buggy.py")
    assert plan.methods == ("exception",) and "captur" in plan.exception_pattern
