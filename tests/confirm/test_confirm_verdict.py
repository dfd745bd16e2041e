"""Verdicts from method outcomes."""

from __future__ import annotations

from synclint.confirm.plan import Plan, Target
from synclint.confirm.verdict import MethodOutcome, Verdict, decide, exit_code
from synclint.diagnostics import Diagnostic, Position, Span

SPAN = Span(Position(13, 9), Position(13, 30))
DIAG = Diagnostic("SYN101", "m", "x.py", SPAN)
PLAN = Plan(DIAG, target=Target("function", "main() in x.py"), methods=("sanitizer", "delay"),
            second=(13, 13), first=(10, 10))


def outcome(method, observed, trials=5, hits=None, error=None, failure=None):
    hits = hits if hits is not None else {"second": trials, "first": trials}
    result = {
        "status": "ok",
        "trials": [{"trial": i + 1, "observed": i < observed,
                    "evidence": [f"`y` held 0 where the reference held {i}"] if i < observed else []}
                   for i in range(trials)],
        "hits": hits,
        "reached": bool(hits.get("second")),
        "error": error,
    }
    return MethodOutcome(method, None if failure else result, failure)


def test_one_sighting_confirms_and_reports_the_hit_rate() -> None:
    c = decide(PLAN, [outcome("sanitizer", 0, trials=1), outcome("delay", 4)])
    assert c.verdict is Verdict.CONFIRMED
    assert "4 of 5 trials" in c.summary and c.summary.startswith("`y` held 0")
    assert exit_code([c]) == 1


def test_nothing_observed_says_what_ran_and_how_often() -> None:
    c = decide(PLAN, [outcome("sanitizer", 0, trials=1), outcome("delay", 0)])
    assert c.verdict is Verdict.NOT_REPRODUCED
    assert "main() in x.py" in c.summary and "line 13 ran 5 times" in c.summary
    assert "line 10 5 times" in c.summary
    assert exit_code([c]) == 0


def test_lines_that_never_ran_are_not_reached() -> None:
    c = decide(PLAN, [outcome("delay", 0, trials=0, hits={})])
    assert c.verdict is Verdict.NOT_REACHED and "never executed" in c.summary


def test_all_methods_failing_is_an_error() -> None:
    c = decide(PLAN, [outcome("sanitizer", 0, failure="timed out after 120 s"),
                      outcome("delay", 0, failure="timed out after 120 s")])
    assert c.verdict is Verdict.ERROR and "timed out" in c.summary


def test_not_executable_plans_keep_their_reason() -> None:
    plan = Plan(DIAG, reason="`f()` needs arguments; pass --entry")
    c = decide(plan, [])
    assert c.verdict is Verdict.NOT_EXECUTABLE and "needs arguments" in c.summary


def test_confirmation_json_is_plain_data() -> None:
    import json

    c = decide(PLAN, [outcome("delay", 5)])
    data = json.loads(json.dumps(c.to_json()))
    assert data["verdict"] == "confirmed" and data["methods"][0]["observed"] == 5


def sanitizer_outcome(other_races):
    result = {"status": "ok", "trials": [{"trial": 1, "observed": False, "evidence": []}],
              "hits": {"second": 1, "first": 1}, "reached": True, "error": None,
              "other_races": other_races}
    return MethodOutcome("sanitizer", result)


def test_delay_evidence_explained_by_another_race_does_not_confirm() -> None:
    """The sanitizer saw lines 11 -> 13 race, not this finding's 10 -> 13: the delayed run's wrong
    value is the neighbour's, and claiming it for this finding would cry wolf."""
    other = [{"first": 11, "second": 13, "text": "race between line 11 and line 13"}]
    c = decide(PLAN, [sanitizer_outcome(other), outcome("delay", 5)])
    assert c.verdict is Verdict.NOT_REPRODUCED
    assert "race between line 11 and line 13" in c.summary and exit_code([c]) == 0


def test_races_far_from_the_finding_do_not_discount_the_delay() -> None:
    other = [{"first": 40, "second": 44, "text": "unrelated race"}]
    c = decide(PLAN, [sanitizer_outcome(other), outcome("delay", 5)])
    assert c.verdict is Verdict.CONFIRMED


def test_a_sanitizer_blind_to_the_kernels_leaves_the_delay_evidence_standing() -> None:
    c = decide(PLAN, [sanitizer_outcome([]), outcome("delay", 3)])
    assert c.verdict is Verdict.CONFIRMED and "3 of 5 trials" in c.summary


def test_single_trial_processes_merge_into_one_result() -> None:
    from synclint.confirm.verdict import merge_results

    one = {"status": "ok", "trials": [{"trial": 1, "observed": True}], "hits": {"second": 1},
           "reached": True, "notes": ["a"]}
    two = {"status": "ok", "trials": [{"trial": 1, "observed": False, "error": "boom"}],
           "hits": {"second": 1}, "reached": True, "notes": ["a", "b"]}
    merged = merge_results([one, None, two])
    assert [t["trial"] for t in merged["trials"]] == [1, 2]
    assert merged["hits"] == {"second": 2} and merged["notes"] == ["a", "b"]
    outcome = MethodOutcome("exception", merged)
    assert outcome.observed == 1 and len(outcome.trials) == 2
    assert merge_results([None, None]) is None
