"""Helpers shared by the frame's tests (imported as ``frame_helpers``: the name ``conftest`` is
ambiguous once several test folders have one).

The frame must work with whatever rules are registered, so its tests do not lean on the stream
rules' judgement: three tiny rules with known behaviour are defined here (SYN901 ``marker(...)``
with a safe fix, SYN902 ``risky(...)`` with an unsafe fix and a related location, SYN903
``boom(...)``, which crashes) and registered per test by the ``fake_rules`` fixture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import libcst as cst

from synclint.diagnostics import Applicability, Diagnostic
from synclint.rules.base import FixKind, Rule, RuleContext

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
            fix = ctx.replace(
                call.func, "marked", "Rename `marker` to `marked`", Applicability.SAFE
            )
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


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
