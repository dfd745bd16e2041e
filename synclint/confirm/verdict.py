"""From experiment results to one verdict per finding.

A finding is ``confirmed`` when any method observed the hazard in at least one trial: the evidence is
concrete (a wrong value next to the synchronized reference, the sanitizer's report on exactly the two
flagged lines, PyTorch's exception at the flagged line), so one sighting is proof; the hit rate is
reported beside it. ``not reproduced`` says what ran and how often the flagged lines executed;
``not reached`` that they never executed; ``error`` that no method could run to the end.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from synclint.confirm.plan import Plan


class Verdict(str, enum.Enum):
    CONFIRMED = "confirmed"
    NOT_REPRODUCED = "not reproduced"
    NOT_REACHED = "not reached"
    NOT_EXECUTABLE = "not executable"
    ERROR = "error"


@dataclass
class MethodOutcome:
    """One method's result as the worker reported it (or the runner's failure sentence)."""

    method: str
    result: Mapping[str, Any] | None
    failure: str | None = None
    seconds: float = 0.0

    @property
    def trials(self) -> list[Mapping[str, Any]]:
        return list((self.result or {}).get("trials") or [])

    @property
    def observed(self) -> int:
        return sum(1 for t in self.trials if t.get("observed"))

    @property
    def error(self) -> str | None:
        if self.failure:
            return self.failure
        result = self.result or {}
        if result.get("status") not in (None, "ok"):
            return result.get("error") or f"status {result.get('status')}"
        return result.get("error")

    @property
    def reached(self) -> bool:
        return bool((self.result or {}).get("reached"))


@dataclass
class Confirmation:
    verdict: Verdict
    summary: str
    evidence: list[str] = field(default_factory=list)
    methods: list[dict[str, Any]] = field(default_factory=list)
    ran: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "summary": self.summary,
            "evidence": self.evidence,
            "ran": self.ran,
            "methods": self.methods,
            "seconds": round(self.seconds, 3),
        }


METHOD_NAMES = {
    "sanitizer": "PyTorch CUDA sanitizer",
    "delay": "delay injection vs synchronized reference",
    "lifetime": "delay injection + allocator reuse check",
    "host-read": "host snapshot at the read vs after synchronization",
    "host-wait": "host state after the wait vs after synchronization",
    "exception": "PyTorch's exception at the flagged line",
}


def _trial_errors(outcome: MethodOutcome) -> list[str]:
    errors: list[str] = []
    for trial in outcome.trials:
        error = trial.get("error")
        if error and error not in errors:
            errors.append(error)
    return errors[:3]


def merge_results(results: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """One result from several single-trial worker processes (methods whose hazard leaves the CUDA
    context unusable, so each trial needs a fresh process): trials renumbered, hits summed."""
    present = [r for r in results if r]
    if not present:
        return None
    merged = dict(present[0])
    merged["trials"], merged["hits"], merged["notes"] = [], {}, []
    for result in present:
        for trial in result.get("trials") or []:
            merged["trials"].append({**trial, "trial": len(merged["trials"]) + 1})
        for name, count in (result.get("hits") or {}).items():
            merged["hits"][name] = merged["hits"].get(name, 0) + count
        merged["notes"] += [n for n in result.get("notes") or [] if n not in merged["notes"]]
        merged["reached"] = bool(merged.get("reached")) or bool(result.get("reached"))
        if result.get("status") not in (None, "ok"):
            merged["status"], merged["error"] = result.get("status"), result.get("error")
    return merged


def _method_json(outcome: MethodOutcome) -> dict[str, Any]:
    return {
        "trial_errors": _trial_errors(outcome),
        "method": outcome.method,
        "trials": len(outcome.trials),
        "observed": outcome.observed,
        "hits": dict((outcome.result or {}).get("hits") or {}),
        "error": outcome.error,
        "notes": list((outcome.result or {}).get("notes") or []),
        "seconds": round(outcome.seconds, 3),
        "timings": dict((outcome.result or {}).get("timings") or {}),
    }


def _hits_sentence(plan: Plan, outcomes: Sequence[MethodOutcome]) -> str:
    second = max(((o.result or {}).get("hits") or {}).get("second", 0) for o in outcomes)
    text = f"line {plan.second[0]} ran {second} time{'s' if second != 1 else ''}"
    if plan.first:
        first = max(((o.result or {}).get("hits") or {}).get("first", 0) for o in outcomes)
        text += f", line {plan.first[0]} {first} time{'s' if first != 1 else ''}"
    return text


def explained_elsewhere(plan: Plan, outcomes: Sequence[MethodOutcome]) -> list[str]:
    """Races the sanitizer saw near this finding, but not this finding's own.

    A delay holds back *everything* after the first access on its stream, so when another race has
    an access between this finding's two lines, the delayed run's wrong value may be that race's.
    The sanitizer tracks each kernel's accesses: if it ran the flagged lines, did not see this pair
    race, but did see such a neighbour, the delay's evidence is not this finding's."""
    sanitizer = next((o for o in outcomes if o.method == "sanitizer"), None)
    if sanitizer is None or sanitizer.observed or sanitizer.error or not sanitizer.reached:
        return []
    low = min(plan.second[0], plan.first[0] if plan.first else plan.second[0])
    high = plan.second[1]
    return [
        race["text"]
        for race in (sanitizer.result or {}).get("other_races") or []
        if low <= race.get("first", 0) <= high or low <= race.get("second", 0) <= high
    ]


def decide(plan: Plan, outcomes: Sequence[MethodOutcome]) -> Confirmation:
    """The verdict for one finding from the outcomes of its methods."""
    if not plan.executable:
        return Confirmation(Verdict.NOT_EXECUTABLE, plan.reason)
    ran = plan.target.description if plan.target else ""
    methods = [_method_json(o) for o in outcomes]
    seconds = max((o.seconds for o in outcomes), default=0.0)  # methods run side by side
    elsewhere = explained_elsewhere(plan, outcomes)
    confirmed = [o for o in outcomes if o.observed and not (elsewhere and o.method == "delay")]
    if confirmed:
        evidence: list[str] = []
        parts = []
        for outcome in confirmed:
            for trial in outcome.trials:
                for line in trial.get("evidence") or []:
                    if line not in evidence:
                        evidence.append(line)
            parts.append(
                f"{METHOD_NAMES.get(outcome.method, outcome.method)}: "
                f"{outcome.observed} of {len(outcome.trials)} trials"
            )
        lead = evidence[0] if evidence else "observed"
        summary = f"{lead}; " + "; ".join(parts)
        return Confirmation(Verdict.CONFIRMED, summary, evidence, methods, ran, seconds)
    finished = [o for o in outcomes if o.error is None or o.trials]
    if not finished:
        errors = "; ".join(f"{o.method}: {o.error}" for o in outcomes) or "nothing ran"
        return Confirmation(Verdict.ERROR, errors, [], methods, ran, seconds)
    if not any(o.reached for o in finished):
        return Confirmation(
            Verdict.NOT_REACHED,
            f"ran {ran}; line {plan.second[0]} never executed",
            [],
            methods,
            ran,
            seconds,
        )
    if elsewhere:
        return Confirmation(
            Verdict.NOT_REPRODUCED,
            f"ran {ran}; the delayed run changed the results, but PyTorch's CUDA sanitizer saw no race "
            f"between lines {plan.first[0] if plan.first else '?'} and {plan.second[0]}, only another "
            f"one: {elsewhere[0]}",
            elsewhere,
            methods,
            ran,
            seconds,
        )
    tried = "; ".join(
        f"{METHOD_NAMES.get(o.method, o.method)}: {len(o.trials)} trial"
        f"{'s' if len(o.trials) != 1 else ''}"
        + (f" ({o.error})" if o.error else "")
        for o in finished
    )
    return Confirmation(
        Verdict.NOT_REPRODUCED,
        f"ran {ran}; {_hits_sentence(plan, finished)}; nothing observed ({tried})",
        [],
        methods,
        ran,
        seconds,
    )


def exit_code(confirmations: Sequence[Confirmation]) -> int:
    """1 if anything was confirmed (like a linter with findings), else 0."""
    return 1 if any(c.verdict is Verdict.CONFIRMED for c in confirmations) else 0
