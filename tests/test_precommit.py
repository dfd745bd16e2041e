"""The pre-commit hook, end to end with `pre-commit try-repo` on a throw-away repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from frame_helpers import ROOT, write


def test_hook_definition():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert len(hooks) == 1
    hook = hooks[0]
    assert hook["id"] == "synclint"
    assert hook["entry"] == "synclint check --force-exclude"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "pyi"]
    assert hook["require_serial"] is True


def _pip_reaches_an_index(tmp_path: Path) -> str | None:
    """None if pip can download a package (pre-commit must install synclint's dependencies),
    else why not."""
    probe = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "-q",
            "-d",
            str(tmp_path / "probe"),
            "click",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return None if probe.returncode == 0 else (probe.stderr.strip().splitlines() or ["?"])[-1]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.slow
def test_pre_commit_try_repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    reason = _pip_reaches_an_index(tmp_path)
    if reason is not None:
        pytest.skip(
            f"pre-commit installs the hook's dependencies with pip, which cannot reach a "
            f"package index here: {reason}"
        )
    repo = tmp_path / "user-repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    write(repo / "clean.py", "x = 1\n")
    write(repo / "broken.py", "def f(:\n    pass\n")
    write(repo / "build" / "generated.py", "def g(:\n")  # excluded by default: --force-exclude
    _git(repo, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    env.pop("FORCE_COLOR", None)

    def try_repo(*files: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pre_commit",
                "try-repo",
                str(ROOT),
                "synclint",
                "--color",
                "never",
                "--files",
                *files,
            ],
            cwd=repo,
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )

    failing = try_repo("clean.py", "broken.py", "build/generated.py")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "broken.py:1:7" in failing.stdout and "SYN001" in failing.stdout
    assert "generated.py" not in failing.stdout
    passing = try_repo("clean.py", "build/generated.py")
    assert passing.returncode == 0, passing.stdout + passing.stderr
