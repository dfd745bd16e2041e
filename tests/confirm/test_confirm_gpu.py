"""On a CUDA device: every buggy twin is confirmed, no fixed twin ever is, each within 15 s.

Skipped without torch or without a CUDA device (CI has neither); run on the GPU machine with
``pytest tests/confirm -m cuda``. The twins' findings come from the markers in the buggy files
(``# [flagged SYN101]``), transplanted onto the fixed twins, whose flagged lines keep their numbers.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from confirm_helpers import ROOT

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - CPU machines
    pytest.skip("no CUDA device", allow_module_level=True)

pytestmark = pytest.mark.cuda
CODES = ["SYN101", "SYN102", "SYN103", "SYN201", "SYN202", "SYN203", "SYN301", "SYN304", "SYN502"]


def confirm(findings: list[dict], tmp_path, name: str, trials: int = 3, entry: str | None = None) -> dict[str, dict]:
    source = tmp_path / f"{name}-findings.json"
    source.write_text(json.dumps(findings))
    report = tmp_path / f"{name}-report.json"
    run = subprocess.run(
        [sys.executable, "-m", "synclint.confirm", "--findings", str(source), "--trials", str(trials),
         "--output-format", "json", "--output-file", str(report), *(["--entry", entry] if entry else [])],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return {item["code"]: item for item in json.loads(report.read_text())}


@pytest.fixture(scope="module")
def reports(twins, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("confirm-gpu")
    buggy, fixed = [], []
    for bad, good in twins.pairs():
        found = twins.marker_findings(bad)
        buggy += found
        fixed += twins.transplant(found, good)
    return confirm(buggy, tmp_path, "buggy"), confirm(fixed, tmp_path, "fixed")


@pytest.mark.parametrize("code", CODES)
def test_buggy_twin_is_confirmed(reports, code) -> None:
    confirmation = reports[0][code]["confirmation"]
    assert confirmation["verdict"] == "confirmed", confirmation
    assert confirmation["evidence"], confirmation
    assert confirmation["environment"]["gpu"]


@pytest.mark.parametrize("code", CODES)
def test_fixed_twin_is_never_confirmed(reports, code) -> None:
    confirmation = reports[1][code]["confirmation"]
    assert confirmation["verdict"] == "not reproduced", confirmation
    assert "ran" in confirmation["summary"]


@pytest.mark.parametrize("code", CODES)
def test_confirming_one_finding_takes_under_15_seconds(reports, code) -> None:
    assert reports[0][code]["confirmation"]["seconds"] < 15, reports[0][code]["confirmation"]


def test_difference_names_the_first_wrong_element() -> None:
    from synclint.confirm.experiments import difference

    want = torch.arange(6, dtype=torch.float32)
    got = want.clone()
    got[4] = -1.0
    said = difference("y", got, want)
    assert "`y` held -1 where the synchronized reference run held 4 (element 4; 1 of 6" in said
    assert difference("y", want.clone(), want) is None


def test_holding_a_stream_back_lets_another_overtake_it() -> None:
    """The mechanism every delay experiment rests on, measured directly."""
    from synclint.confirm.experiments import hold_back, warm_up

    warm_up(1000)
    side = torch.cuda.Stream()
    x = torch.zeros(1 << 20, device="cuda")
    y = torch.empty_like(x)
    for attempt in range(2):  # the first pass loads the kernels (their first launch synchronizes)
        x.zero_()
        torch.cuda.synchronize()
        if attempt:
            hold_back(torch.cuda.current_stream(), 200_000_000)
        x.fill_(2.0)
        with torch.cuda.stream(side):
            torch.mul(x, 1, out=y)  # no wait: overtakes the held-back fill
        torch.cuda.synchronize()
    assert float(y[0]) == 0.0 and float(x[0]) == 2.0


def test_entry_point_reaches_a_method_synclint_cannot_call(twins, tmp_path) -> None:
    """A race inside a method: not executable alone, confirmed through the script's own entry
    point; the fixed twin through the same entry point is not."""
    ((bad, good),) = twins.pairs("entry_")
    found = twins.marker_findings(bad)
    alone = confirm(found, tmp_path, "alone", trials=2)
    assert alone["SYN101"]["confirmation"]["verdict"] == "not executable"
    assert "method" in alone["SYN101"]["confirmation"]["summary"]
    buggy = confirm(found, tmp_path, "entry-buggy", trials=3, entry=twins.entry_command(bad))
    assert buggy["SYN101"]["confirmation"]["verdict"] == "confirmed", buggy["SYN101"]["confirmation"]
    fixed = confirm(twins.transplant(found, good), tmp_path, "entry-fixed", trials=3,
                    entry=twins.entry_command(good))
    assert fixed["SYN101"]["confirmation"]["verdict"] == "not reproduced", fixed["SYN101"]["confirmation"]
