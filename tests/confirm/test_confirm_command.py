"""The click command on a machine without CUDA: planning output, clear refusals, exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from synclint.confirm.command import confirm

from confirm_helpers import ROOT, TWINS

FAKE_TORCH = """\
import types
__version__ = "0.0+fake"
version = types.SimpleNamespace(cuda=None)
cuda = types.SimpleNamespace(is_available=lambda: False)
"""


def test_importing_the_command_does_not_import_torch() -> None:
    code = "import sys, synclint.confirm.command; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


def test_dry_run_says_what_would_run_and_how(twins, tmp_path) -> None:
    findings = tmp_path / "f.json"
    import json

    findings.write_text(json.dumps(twins.marker_findings(TWINS / "syn101_buggy.py")))
    result = CliRunner().invoke(confirm, ["--dry-run", "--findings", str(findings)])
    assert result.exit_code == 0, result.output
    assert "would execute" in result.output and "main() in syn101_buggy.py" in result.output
    assert "sanitizer + delay; delay before line(s) 10" in result.output


def test_without_cuda_it_says_so_and_exits_2(twins, tmp_path, monkeypatch) -> None:
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(FAKE_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(fake))
    findings = tmp_path / "f.json"
    import json

    findings.write_text(json.dumps(twins.marker_findings(TWINS / "syn202_buggy.py")))
    result = CliRunner().invoke(confirm, ["--findings", str(findings)])
    assert result.exit_code == 2, result.output
    assert "no CUDA device" in result.output and "0.0+fake" in result.output


def test_without_torch_it_says_how_to_get_it(twins, tmp_path, monkeypatch) -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover - only meaningful where torch is absent
        return
    findings = tmp_path / "f.json"
    import json

    findings.write_text(json.dumps(twins.marker_findings(TWINS / "syn202_buggy.py")))
    result = CliRunner().invoke(confirm, ["--findings", str(findings)])
    assert result.exit_code == 2 and "synclint[confirm]" in result.output


def test_bad_entry_and_missing_input_are_usage_errors(tmp_path) -> None:
    result = CliRunner().invoke(confirm, ["--entry", "make train", str(TWINS)])
    assert result.exit_code == 2 and "--entry" in result.output
    result = CliRunner().invoke(confirm, [])
    assert result.exit_code == 2 and "--findings" in result.output


def test_a_bad_findings_file_exits_2(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    result = CliRunner().invoke(confirm, ["--findings", str(bad)])
    assert result.exit_code == 2 and "not JSON" in result.output


def test_nothing_confirmable_runs_nothing_and_exits_0(tmp_path) -> None:
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    result = CliRunner().invoke(confirm, [str(clean)])
    assert result.exit_code == 0 and "No confirmable findings" in result.output


FAKE_PYTHON = """\
#!{python}
# Stands in for `python -m synclint.confirm.worker JOB RESULT`: answers like a CUDA machine on which
# every buggy twin's hazard shows and no fixed twin's does.
import json, sys
job_path, result_path = sys.argv[-2:]
job = json.load(open(job_path))
env = {{"gpu": "Fake GPU", "driver": "1.0", "torch": "0.0+fake", "cuda_runtime": "13.0",
       "cuda_available": True}}
if job["method"] == "probe":
    result = {{"status": "ok", "environment": env}}
else:
    buggy = "buggy" in job["file"]
    trials = [{{"trial": k + 1, "observed": buggy, "evidence": ["wrong value"] if buggy else []}}
              for k in range(job["trials"])]
    result = {{"status": "ok", "method": job["method"], "trials": trials,
              "hits": {{"second": job["trials"]}}, "reached": True, "notes": [], "error": None,
              "environment": env}}
json.dump(result, open(result_path, "w"))
"""


def fake_python(tmp_path: Path) -> str:
    script = tmp_path / "python-fake"
    script.write_text(FAKE_PYTHON.format(python=sys.executable))
    script.chmod(0o755)
    return str(script)


def test_end_to_end_with_a_stand_in_worker(twins, tmp_path) -> None:
    import json

    bad, good = TWINS / "syn101_buggy.py", TWINS / "syn101_fixed.py"
    found = twins.marker_findings(bad)
    capture = twins.marker_findings(TWINS / "syn502_buggy.py")
    findings = tmp_path / "f.json"
    findings.write_text(json.dumps(found + twins.transplant(found, good) + capture))
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        confirm,
        ["--findings", str(findings), "--python", fake_python(tmp_path), "--trials", "3",
         "--output-format", "json", "--output-file", str(report)],
    )
    assert result.exit_code == 1, result.output  # something was confirmed
    items = json.loads(report.read_text())
    verdicts = {(Path(i["filename"]).name, i["code"]): i["confirmation"] for i in items}
    buggy = verdicts[("syn101_buggy.py", "SYN101")]
    assert buggy["verdict"] == "confirmed" and "3 of 3 trials" in buggy["summary"]
    assert [m["method"] for m in buggy["methods"]] == ["sanitizer", "delay"]
    assert buggy["environment"]["gpu"] == "Fake GPU" and buggy["trials_requested"] == 3
    assert verdicts[("syn101_fixed.py", "SYN101")]["verdict"] == "not reproduced"
    capture_result = verdicts[("syn502_buggy.py", "SYN502")]
    assert capture_result["methods"][0]["trials"] == 3  # three single-trial processes, merged
    assert capture_result["verdict"] == "confirmed"


def test_progress_rewrites_one_line_on_a_terminal_and_is_silent_otherwise(capsys) -> None:
    from synclint.confirm.command import Progress

    shown = Progress(enabled=True)
    shown.prefix = "finding 2 of 5 (SYN101 x.py:13) "
    shown.show("delay: trial 3 of 5")
    shown.done()
    Progress(enabled=False).show("nothing")
    err = capsys.readouterr().err
    assert "\r\033[Kfinding 2 of 5 (SYN101 x.py:13) delay: trial 3 of 5" in err
    assert "nothing" not in err
