"""Reports: text, JSON (round-trips through --findings) and SARIF with a `confirmation` property."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synclint.confirm.report import FindingsError, read_findings, render_json, render_sarif, render_text
from synclint.confirm.verdict import Confirmation, Verdict
from synclint.diagnostics import Diagnostic, Position, Related, Span

ENV = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "torch": "2.11.0", "cuda_runtime": "13.0"}


def pairs(tmp_path: Path):
    path = str(tmp_path / "x.py")
    d = Diagnostic(
        "SYN101", "`x` raced", path, Span(Position(13, 9), Position(13, 30)),
        (Related(Span(Position(10, 5), Position(10, 17)), "`x` written"),),
        data={"tensor": "x", "first": {"line": 10, "stream": "default"}},
        noqa_line=13, noqa_end_line=13,
    )
    c = Confirmation(Verdict.CONFIRMED, "`y` held 0 where the reference held 2; 5 of 5 trials",
                     ["`y` held 0 where the reference held 2", "second piece"],
                     [{"method": "delay", "trials": 5, "observed": 5, "hits": {}, "error": None,
                       "notes": [], "seconds": 1.0}], "main() in x.py", 1.0)
    return [(d, c)]


def test_text_names_the_machine_the_verdict_and_the_evidence(tmp_path) -> None:
    text = render_text(pairs(tmp_path), ENV, 5, tmp_path)
    assert "NVIDIA H100 80GB HBM3, driver 580.159.04, torch 2.11.0, CUDA 13.0, 5 trials" in text
    assert "x.py:13:9: SYN101 confirmed: `y` held 0" in text
    assert "evidence: second piece" in text and "1 finding: 1 confirmed." in text


def test_text_names_no_machine_when_nothing_ran(tmp_path) -> None:
    """No finding could be run, so no device was probed: the header must not say "no GPU" (on a
    GPU machine that reads as a wrong claim about the machine)."""
    d, _ = pairs(tmp_path)[0]
    not_run = Confirmation(Verdict.NOT_EXECUTABLE, "`next` is a method")
    text = render_text([(d, not_run)], {}, 5, tmp_path)
    assert text.startswith("synclint confirm: no finding could be run, so none ran on a device")
    assert "no GPU" not in text and "torch ?" not in text


def test_json_round_trips_through_findings(tmp_path) -> None:
    text = render_json(pairs(tmp_path), ENV, 5, tmp_path)
    items = json.loads(text)
    assert items[0]["confirmation"]["verdict"] == "confirmed"
    assert items[0]["confirmation"]["environment"]["gpu"] == ENV["gpu"]
    report = tmp_path / "report.json"
    report.write_text(text)
    (back,) = read_findings(str(report))
    original = pairs(tmp_path)[0][0]
    assert back.code == original.code and back.span == original.span and back.path == original.path
    assert back.related[0].span == original.related[0].span and back.related[0].path is None
    assert back.data["first"]["line"] == 10


def test_sarif_results_carry_the_confirmation(tmp_path) -> None:
    log = json.loads(render_sarif(pairs(tmp_path), ENV, 5, tmp_path))
    run = log["runs"][0]
    assert run["properties"]["confirmEnvironment"]["driver"] == "580.159.04"
    result = run["results"][0]
    assert result["ruleId"] == "SYN101"
    assert result["properties"]["confirmation"]["verdict"] == "confirmed"


@pytest.mark.parametrize(
    "content, words",
    [("{", "not JSON"), ('{"a": 1}', "list of findings"), ('[{"code": 1}]', "`code` and `filename`"),
     ('[{"code": "SYN101", "filename": "x.py", "location": 3}]', "location")],
)
def test_bad_findings_files_are_explained(tmp_path, content, words) -> None:
    path = tmp_path / "f.json"
    path.write_text(content)
    with pytest.raises(FindingsError, match=words):
        read_findings(str(path))


def test_missing_findings_file(tmp_path) -> None:
    with pytest.raises(FindingsError, match="cannot read"):
        read_findings(str(tmp_path / "none.json"))
