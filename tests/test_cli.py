"""The command line as a user meets it: commands, exit statuses, selection, colour, start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from frame_helpers import ROOT, write

import synclint


def test_default_command_is_check(project, cli, fake_rules):
    write(project / "a.py", "marker()\n")
    plain = cli("a.py", "--no-cache")
    explicit = cli("check", "a.py", "--no-cache")
    assert plain.status == explicit.status == 1
    assert plain.out == explicit.out
    assert "SYN901 [*] marker() called" in plain.out


def test_clean_file_exits_zero_and_says_so(project, cli):
    write(project / "a.py", "x = 1\n")
    result = cli("a.py")
    assert result.status == 0
    assert result.out.strip() == "All checks passed!"


def test_no_paths_lints_the_working_directory(project, cli, fake_rules):
    write(project / "pkg" / "a.py", "marker()\n")
    result = cli("check", "--output-format", "concise", "--no-cache")
    assert result.status == 1
    assert "pkg/a.py:1:1: SYN901" in result.out


def test_exit_zero(project, cli, fake_rules):
    write(project / "a.py", "marker()\n")
    assert cli("a.py", "--exit-zero").status == 0


def test_missing_path_is_a_usage_error_naming_it(project, cli):
    result = cli("check", "nope/missing.py")
    assert result.status == 2
    assert "nope/missing.py" in result.err
    assert "Traceback" not in result.err


def test_unknown_selector_is_an_error(project, cli):
    write(project / "a.py", "x = 1\n")
    result = cli("a.py", "--select", "SYN999")
    assert result.status == 2
    assert "SYN999" in result.err and "unknown rule selector" in result.err


def test_unknown_option_exits_two(project, cli):
    assert cli("check", "--no-such-option").status == 2


def test_select_prefix_ignore_and_extend_select(project, cli, fake_rules):
    write(project / "a.py", "marker()\nrisky(1)\n")

    def codes(*args):
        result = cli("a.py", "--no-cache", "--output-format", "json", *args)
        return sorted({item["code"] for item in json.loads(result.out)})

    assert codes() == ["SYN901", "SYN902"]
    assert codes("--select", "SYN901") == ["SYN901"]
    assert codes("--select", "SYN90", "--ignore", "SYN902") == ["SYN901"]
    assert codes("--select", "SYN901", "--extend-select", "SYN902") == ["SYN901", "SYN902"]
    assert codes("--select", "SYN901,SYN902") == ["SYN901", "SYN902"]
    assert codes("--ignore", "ALL") == []


def test_statistics(project, cli, fake_rules):
    write(project / "a.py", "marker()\nmarker()\nrisky(1)\n")
    result = cli("a.py", "--statistics", "--no-cache")
    assert result.status == 1
    lines = result.out.splitlines()
    assert lines[0].split("\t") == ["2", "SYN901", "[*] test-marker"]
    assert lines[1].split("\t") == ["1", "SYN902", "[ ] test-risky"]
    assert "Found 3 errors." in result.out


def test_quiet_prints_findings_only(project, cli, fake_rules):
    write(project / "a.py", "marker()\n")
    result = cli("a.py", "-q", "--no-cache")
    assert "SYN901" in result.out and "Found" not in result.out
    write(project / "a.py", "x = 1\n")
    assert cli("a.py", "-q").out == ""


def test_version(cli):
    result = cli("--version")
    assert result.status == 0
    assert result.out.strip() == f"synclint {synclint.__version__}"


def test_rules_lists_the_catalogue(cli):
    from synclint.rules.registry import all_rules

    result = cli("rules")
    assert result.status == 0
    for code, rule in all_rules().items():
        line = next(line for line in result.out.splitlines() if line.startswith(code))
        assert rule.name in line
        assert ("on" if rule.default_enabled else "off") in line.split()
        assert rule.fix_kind.value in line.split()


def test_rule_prints_the_page(cli):
    result = cli("rule", "syn001")
    assert result.status == 0
    assert result.out.startswith("# SYN001: syntax-error")


def test_rule_unknown_code(cli):
    result = cli("rule", "SYN999")
    assert result.status == 2 and "unknown rule" in result.err


def test_rule_crash_is_reported_and_the_run_goes_on(project, cli, fake_rules):
    write(project / "a_crash.py", "boom()\nmarker()\n")
    write(project / "b.py", "marker()\n")
    result = cli(".", "--output-format", "concise", "--no-cache")
    assert result.status == 2
    assert (
        "internal error: rule SYN903 crashed on a_crash.py: ZeroDivisionError: rule exploded"
        in result.err
    )
    # The other rules still ran on the crashing file, and the other file was linted.
    assert "a_crash.py:2:1: SYN901" in result.out
    assert "b.py:1:1: SYN901" in result.out


def test_internal_error_outside_rules_maps_to_exit_two(project, cli, monkeypatch):
    import synclint.check_command as check_command

    def explode(*args, **kwargs):
        raise RuntimeError("frame bug")

    monkeypatch.setattr(check_command, "run_check", explode)
    write(project / "a.py", "x = 1\n")
    result = cli("a.py")
    assert result.status == 2
    assert "internal error: RuntimeError: frame bug" in result.err


def test_colour_only_when_forced_or_on_a_terminal(project, cli, fake_rules, monkeypatch):
    write(project / "a.py", "marker()\n")
    assert "\x1b[" not in cli("a.py", "--no-cache").out  # captured output is not a terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in cli("a.py", "--no-cache").out
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in cli("a.py", "--no-cache").out


def test_use_color_on_a_tty(monkeypatch):
    from synclint.output import use_color

    class Tty:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert use_color(Tty()) is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(Tty()) is False


def test_stdin_with_stdin_filename(project, cli, fake_rules):
    result = cli(
        "check",
        "-",
        "--stdin-filename",
        "src/mod.py",
        "--output-format",
        "concise",
        stdin=b"x = 1\nmarker()\n",
    )
    assert result.status == 1
    assert result.out.startswith("src/mod.py:2:1: SYN901")


def test_stdin_fix_writes_the_fixed_source_to_stdout(project, cli, fake_rules):
    result = cli("check", "-", "--fix", stdin=b"marker()\n")
    assert result.out == "marked()\n"
    assert result.status == 0


def test_confirm_missing_does_not_break_check(project, cli, monkeypatch):
    import synclint.cli as cli_module

    monkeypatch.setattr(cli_module, "_confirm_command", lambda: None)
    write(project / "a.py", "x = 1\n")
    assert cli("a.py").status == 0
    assert cli("--help").status == 0


def test_confirm_broken_import_is_a_clear_error(project, cli, monkeypatch):
    import synclint.cli as cli_module

    monkeypatch.setattr(
        cli_module, "_confirm_command", lambda: cli_module._broken_confirm(ImportError("no torch"))
    )
    result = cli("confirm", "x.py")
    assert result.status == 2
    assert "synclint confirm` is unavailable: ImportError: no torch" in result.err


def _run(args, cwd, **kwargs):
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, env=env, timeout=120, **kwargs
    )


def test_python_dash_m_and_console_script(tmp_path):
    write(tmp_path / "a.py", "x = (\n")
    by_module = _run([sys.executable, "-m", "synclint", "a.py", "--no-cache"], tmp_path)
    assert by_module.returncode == 1, by_module.stderr
    assert "SYN001 syntax error: '(' was never closed" in by_module.stdout
    script = Path(sys.executable).parent / "synclint"
    if script.exists():
        by_script = _run([str(script), "check", "a.py", "--no-cache"], tmp_path)
        assert by_script.stdout == by_module.stdout


def test_lint_path_never_imports_torch(tmp_path):
    """Run the whole check in a subprocess over real rule fixtures, then look at sys.modules."""
    probe = (
        "import sys\n"
        "from synclint.cli import run\n"
        "status = run(sys.argv[1:])\n"
        "loaded = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "print('TORCH-MODULES', loaded, file=sys.stderr)\n"
        "sys.exit(status)\n"
    )
    targets = [str(ROOT / "examples"), str(ROOT / "fixtures")]
    result = _run(
        [sys.executable, "-c", probe, *targets, "--no-cache", "--exit-zero", "-q"], tmp_path
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "TORCH-MODULES []" in result.stderr


def test_version_does_not_import_the_analysis(tmp_path):
    probe = (
        "import sys\n"
        "from synclint.cli import run\n"
        "run(['--version'])\n"
        "heavy = ('libcst', 'synclint.model', 'torch')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    result = _run([sys.executable, "-c", probe], tmp_path)
    assert result.stdout.strip().endswith("[]"), result.stdout


def test_stdin_fix_passes_bytes_through(tmp_path):
    """With --fix, standard output gets the source byte for byte (fixed, or untouched)."""
    latin1 = "# coding: latin-1\nname = 'caf\u00e9'\n".encode("latin-1")
    undecodable = b"x = '\xff'\n"
    for data in (latin1, undecodable):
        result = subprocess.run(
            [sys.executable, "-m", "synclint", "check", "-", "--fix", "--no-cache"],
            input=data,
            capture_output=True,
            cwd=tmp_path,
            timeout=120,
        )
        assert result.stdout == data, result.stderr
