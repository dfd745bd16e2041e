"""The click command on a machine without CUDA: planning output, clear refusals, exit codes."""

from __future__ import annotations

import subprocess
import sys

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
