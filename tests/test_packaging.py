"""Packaging and documentation that a new user relies on: the README's commands and rule index,
the CI script, and a built wheel that carries the rule pages."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from frame_helpers import ROOT

from synclint.rule_pages import INDEX_END, INDEX_START, markdown_rule_index

README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL_AND_RUN = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/synclint examples/"
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest"


def test_readme_opens_with_the_two_setup_commands():
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.DOTALL)
    assert [b.strip() for b in blocks[:2]] == [INSTALL_AND_RUN, TEST_COMMAND]
    assert README.index(INSTALL_AND_RUN) < README.index("## ")  # before any section


def test_ci_runs_exactly_the_readme_test_command():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in script.splitlines() if line.strip() and not line.startswith("#")]
    assert commands[-1] == TEST_COMMAND


def test_readme_rule_index_matches_the_registry():
    start = README.index(INDEX_START) + len(INDEX_START)
    table = README[start : README.index(INDEX_END)].strip()
    assert table == markdown_rule_index(), (
        "the README's rule index is stale: run `python -m synclint.rule_pages README.md`"
    )


def test_readme_configuration_example_is_valid(tmp_path):
    from synclint.config import load_config
    from synclint.project import Overrides, Project

    block = re.search(r"```toml\n(\[tool\.synclint\].*?)```", README, flags=re.DOTALL).group(1)
    (tmp_path / "pyproject.toml").write_text(block, encoding="utf-8")
    config = load_config(tmp_path / "pyproject.toml")
    assert config.per_file_ignores == (("tests/*", ("SYN2",)),)
    assert config.settings.synchronizing_functions == ("mylib.cuda_sync", "TensorMemoryPool.store_tensor")
    codes = Project(Overrides(), tmp_path).file_settings(tmp_path / "a.py").codes
    assert "SYN002" in codes and "SYN105" not in codes


def test_readme_tells_ruff_users_about_external():
    assert 'external = ["SYN"]' in README


def test_example_is_flagged_with_syn101(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "synclint",
            str(ROOT / "examples"),
            "--no-cache",
            "--output-format",
            "concise",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "prefetcher.py" in result.stdout and "SYN101" in result.stdout


def _build_wheel(out: Path) -> Path:
    attempts = [[], ["--no-build-isolation"]]  # isolated first; offline, the local setuptools
    failures = []
    for extra in attempts:
        built = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "-q",
                "-w",
                str(out),
                *extra,
                str(ROOT),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        wheels = sorted(out.glob("synclint-*.whl"))
        if built.returncode == 0 and wheels:
            return wheels[-1]
        failures.append(built.stderr.strip().splitlines()[-1:] or ["?"])
    pytest.skip(f"cannot build a wheel here (no index and no usable setuptools?): {failures}")


@pytest.mark.slow
def test_wheel_ships_the_rule_pages_and_works_installed(tmp_path):
    wheel = _build_wheel(tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    pages = sorted(p.name for p in (ROOT / "rules").glob("*.md"))
    assert sorted(Path(n).name for n in names if n.startswith("synclint/rulebook/")) == pages
    assert not [n for n in names if n.startswith(("tests/", "fixtures/"))]

    # A fresh environment holding only the wheel; its dependencies come from this environment's
    # site-packages through a .pth file (so no index is needed, and the checkout is not importable).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "synclint-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


    def run(*command: str) -> subprocess.CompletedProcess:
        """A command of the fresh environment, run outside the checkout."""
        return subprocess.run(
            list(command), capture_output=True, text=True, cwd=outside, env=env, timeout=120
        )

    where = run(str(python), "-c", "import synclint; print(synclint.__file__)")
    assert where.returncode == 0, where.stderr
    assert where.stdout.startswith(str(venv)), "the test must exercise the installed wheel"
    page = run(str(venv / "bin" / "synclint"), "rule", "SYN001")
    assert page.returncode == 0, page.stderr
    assert page.stdout.startswith("# SYN001: syntax-error")
    (outside / "bad.py").write_text("x = (\n")
    check = run(str(venv / "bin" / "synclint"), "bad.py", "--no-cache")
    assert check.returncode == 1 and "SYN001" in check.stdout
