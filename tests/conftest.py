"""Fixtures shared by the frame's tests; the helpers live in :mod:`frame_helpers`."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass

import pytest
from frame_helpers import FAKE_RULES

from synclint.rules.registry import all_rules


@pytest.fixture
def fake_rules(monkeypatch):
    """Register the fake rules (the registry's cached dict is shared by every caller). They exist
    in this process only: worker processes are forked from it, not from the fork server (whose
    workers know only the rules in the package)."""
    import synclint.runner
    from synclint.pipeline import _triggers_for

    monkeypatch.setattr(synclint.runner, "fork_server", lambda: None)
    registry = all_rules()
    for rule in FAKE_RULES:
        registry[rule.code] = rule
    _triggers_for.cache_clear()
    try:
        yield FAKE_RULES
    finally:
        for rule in FAKE_RULES:
            registry.pop(rule.code, None)
        _triggers_for.cache_clear()


@dataclass
class CliResult:
    status: int
    out: str
    err: str


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run the CLI in this process: ``cli("check", "x.py", stdin=b"...") -> CliResult``."""
    from synclint.cli import run

    def invoke(*args: str, stdin: bytes | None = None) -> CliResult:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        capsys.readouterr()
        status = run(list(args))
        captured = capsys.readouterr()
        return CliResult(status, captured.out, captured.err)

    return invoke


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project directory that is also the working directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path
