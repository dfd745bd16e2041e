"""Shared helpers for the frame's tests.

The frame must work with whatever rules are registered, so its tests do not lean on the stream
rules' judgement: the ``fake_rules`` fixture registers three tiny rules with known behaviour
(SYN901 ``marker(...)`` with a safe fix, SYN902 ``risky(...)`` with an unsafe fix and a related
location, SYN903 ``boom(...)``, which crashes) for the duration of one test.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import libcst as cst
import pytest

from synclint.diagnostics import Applicability, Diagnostic
from synclint.rules.base import FixKind, Rule, RuleContext
from synclint.rules.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent


def _calls(module: cst.Module, name: str) -> list[cst.Call]:
    found: list[cst.Call] = []

    class Visitor(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == name:
                found.append(node)

    module.visit(Visitor())
    return found


class MarkerRule(Rule):
    code = "SYN901"
    name = "test-marker"
    summary = "test only: a call to marker()"
    fix_kind = FixKind.SAFE
    triggers = ("marker",)

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        for call in _calls(ctx.module, "marker"):
            fix = ctx.replace(call.func, "marked", "Rename `marker` to `marked`", Applicability.SAFE)
            yield ctx.diagnostic(self, call, "marker() called", fix=fix, data={"name": "marker"})


class RiskyRule(Rule):
    code = "SYN902"
    name = "test-risky"
    summary = "test only: a call to risky()"
    fix_kind = FixKind.UNSAFE
    triggers = ("risky",)

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        for call in _calls(ctx.module, "risky"):
            fix = ctx.replace(call.func, "careful", "Use `careful` instead", Applicability.UNSAFE)
            related = [(arg.value, "argument here") for arg in call.args[:1]]
            yield ctx.diagnostic(self, call, "risky() called", related=related, fix=fix)


class BoomRule(Rule):
    code = "SYN903"
    name = "test-boom"
    summary = "test only: crashes on boom()"
    triggers = ("boom",)

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        if _calls(ctx.module, "boom"):
            raise ZeroDivisionError("rule exploded")
        return ()


FAKE_RULES = (MarkerRule, RiskyRule, BoomRule)


@pytest.fixture
def fake_rules():
    """Register the fake rules (the registry's cached dict is shared by every caller)."""
    from synclint.pipeline import _triggers_for

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


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
