"""Lint one file's text: parse, build the model lazily, run the selected rules.

This is the core the CLI, the cache, the fixer and ``confirm`` all call. It never raises for bad
input: a parse failure becomes SYN001, and a crash inside a rule becomes a diagnostic for the file.
(Decoding bytes, suppressions, SYN002, and file discovery are layered on top in the pipeline.)
"""

from __future__ import annotations

from typing import Iterable

import libcst as cst

from synclint.diagnostics import Diagnostic, Position, Span
from synclint.rules.base import Rule, RuleContext
from synclint.rules.registry import all_rules
from synclint.settings import AnalysisSettings


def default_codes() -> frozenset[str]:
    return frozenset(code for code, rule in all_rules().items() if rule.default_enabled)


def syntax_error_diagnostic(path: str, error: cst.ParserSyntaxError) -> Diagnostic:
    line = max(1, error.raw_line)
    column = max(1, error.raw_column + 1)
    reason = error.message.splitlines()[0] if error.message else "invalid syntax"
    at = Position(line, column)
    return Diagnostic(
        code="SYN001",
        message=f"syntax error: {reason}",
        path=path,
        span=Span(at, at),
        noqa_line=line,
        noqa_end_line=line,
    )


def run_rules(
    path: str,
    source: str,
    module: cst.Module,
    codes: Iterable[str],
    settings: AnalysisSettings,
) -> list[Diagnostic]:
    rules = all_rules()
    ctx = RuleContext(path, source, module, settings)
    found: list[Diagnostic] = []
    for code in sorted(set(codes)):
        rule_cls = rules.get(code)
        if rule_cls is None or rule_cls.builtin:
            continue
        rule: Rule = rule_cls()
        found.extend(d for d in rule.check(ctx) if d.code == code)
    return sorted(set(found), key=Diagnostic.sort_key)


def lint_source(
    source: str,
    path: str = "<string>",
    codes: Iterable[str] | None = None,
    settings: AnalysisSettings | None = None,
) -> list[Diagnostic]:
    """Lint Python source text and return its diagnostics (unsuppressed), sorted."""
    settings = settings or AnalysisSettings()
    selected = default_codes() if codes is None else frozenset(codes)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        return [syntax_error_diagnostic(path, error)] if "SYN001" in selected else []
    return run_rules(path, source, module, selected, settings)
