"""The result cache: hits skip the analysis, every input to the result is in the key."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from frame_helpers import write


@pytest.fixture
def analyses(monkeypatch):
    """Count how many times a file is really linted (not served from the cache)."""
    import synclint.runner as runner

    calls = []
    real = runner.lint_bytes

    def counting(data, path, *args, **kwargs):
        calls.append(path)
        return real(data, path, *args, **kwargs)

    monkeypatch.setattr(runner, "lint_bytes", counting)
    return calls


def test_second_run_is_served_from_the_cache(project, cli, fake_rules, analyses):
    write(project / "a.py", "marker()\n")
    first = cli("a.py")
    second = cli("a.py")
    assert analyses == ["a.py"]
    assert first.out == second.out and second.status == 1
    cache = project / ".synclint_cache"
    assert (
        (cache / "CACHEDIR.TAG")
        .read_text()
        .startswith("Signature: 8a477f597d28d172789f06886806bc55")
    )
    assert "*" in (cache / ".gitignore").read_text().splitlines()


def test_key_covers_content_codes_and_settings(project, cli, fake_rules, analyses):
    path = write(project / "a.py", "marker()\n")
    cli("a.py")
    cli("a.py", "--select", "SYN901")
    write(project / "synclint.toml", 'parameter-origin = "synchronized"\n')
    cli("a.py")
    path.write_text("marker()\nmarker()\n")
    result = cli("a.py")
    assert len(analyses) == 4
    assert result.out.count("SYN901") == 2


def test_warnings_survive_a_cache_hit(project, cli, analyses):
    write(project / "a.py", "x = 1  # noqa: SYN999\n")
    assert "SYN999" in cli("a.py").err
    assert "SYN999" in cli("a.py").err
    assert len(analyses) == 1


def test_no_cache(project, cli, fake_rules, analyses):
    write(project / "a.py", "marker()\n")
    cli("a.py", "--no-cache")
    cli("a.py", "--no-cache")
    assert len(analyses) == 2
    assert not (project / ".synclint_cache").exists()


def test_crashes_are_not_cached(project, cli, fake_rules):
    write(project / "a.py", "boom()\n")
    assert cli("a.py").status == 2
    assert cli("a.py").status == 2


def test_corrupt_entries_are_ignored(project, cli, fake_rules):
    write(project / "a.py", "marker()\n")
    cli("a.py")
    for entry in (project / ".synclint_cache").rglob("*.json"):
        entry.write_text("{not json")
    result = cli("a.py")
    assert result.status == 1 and "SYN901" in result.out


def test_clean(project, cli):
    write(project / "a.py", "x = 1\n")
    write(project / "sub" / "b.py", "x = 1\n")
    cli("a.py")
    (project / "sub" / ".synclint_cache").mkdir()
    result = cli("clean")
    assert result.status == 0
    assert not (project / ".synclint_cache").exists()
    assert not (project / "sub" / ".synclint_cache").exists()


def test_round_trip_of_every_field(fake_rules):
    from synclint.cache import decode_diagnostic, encode_diagnostic
    from synclint.pipeline import FileSettings, lint_text

    result = lint_text(
        "risky(x)\nmarker()\n", "t.py", FileSettings(frozenset({"SYN901", "SYN902"}))
    )
    assert result.diagnostics
    for d in result.diagnostics:
        again = decode_diagnostic(encode_diagnostic(d), d.path)
        assert again == d and dict(again.data) == dict(d.data)


def test_clean_removes_the_configured_cache_dir_only_if_ours(project, cli):
    write(project / "synclint.toml", 'cache-dir = "var/lint-cache"\n')
    write(project / "a.py", "x = 1\n")
    cli("a.py")
    assert (project / "var" / "lint-cache").is_dir()
    assert cli("clean").status == 0
    assert not (project / "var" / "lint-cache").exists()
    write(project / "var" / "lint-cache" / "precious.txt", "keep\n")
    cli("clean")
    assert (project / "var" / "lint-cache" / "precious.txt").is_file()


def test_a_warm_run_imports_neither_the_analysis_nor_the_process_pool(tmp_path):
    """Every answer comes from the cache, so nothing is analysed and no worker is started: a warm
    run over many files imports neither libcst nor the process pool (start-up is most of it)."""

    for i in range(40):  # more than PARALLEL_THRESHOLD: a cold run of these starts workers
        (tmp_path / f"m{i}.py").write_text(f"import torch\n\nx{i} = torch.zeros(2).to('cuda')\n")
    probe = (
        "import sys\n"
        "from synclint.cli import run\n"
        "status = run(sys.argv[1:])\n"
        "heavy = ('libcst', 'concurrent.futures.process', 'multiprocessing')\n"
        "print('HEAVY', sorted(m for m in sys.modules if m.startswith(heavy)), file=sys.stderr)\n"
        "sys.exit(status)\n"
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe, "check", ".", "--exit-zero"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        for _ in range(2)
    ]
    assert all(run.returncode == 0 for run in runs), runs[-1].stderr[-2000:]
    assert "HEAVY []" not in runs[0].stderr  # the cold run did need them
    assert "HEAVY []" in runs[1].stderr
