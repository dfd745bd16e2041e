"""Output formats. Each module renders a :class:`Report` to text; :data:`FORMATS` names them.

Modules are imported only when their format is chosen, so ``--output-format concise`` never pays
for the SARIF writer and the CLI starts fast.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from synclint.diagnostics import Applicability, Diagnostic

#: format name -> module under synclint.output
FORMATS = {
    "full": "full",
    "concise": "concise",
    "json": "json_format",
    "json-lines": "json_lines",
    "sarif": "sarif",
    "github": "github",
}
DOCS_URL = "https://github.com/synclint/synclint/blob/main/rules/{code}.md"
HOME_URL = "https://github.com/synclint/synclint"


def rule_url(code: str) -> str:
    return DOCS_URL.format(code=code)


@dataclass
class Report:
    """Everything a format may show: the findings (sorted), the files' text for code frames,
    and run totals for the summary."""

    diagnostics: Sequence[Diagnostic]
    sources: Mapping[str, str] = field(default_factory=dict)
    root: Path = field(default_factory=Path.cwd)
    fixed: int = 0
    unsafe_fixes: bool = False
    color: bool = False
    show_summary: bool = True
    fix_mode: bool = False
    #: Files that could not be checked (unreadable, or a synclint bug): their errors went to
    #: standard error, and the summary must not call the run clean.
    unchecked: int = 0

    def source_lines(self, path: str) -> list[str] | None:
        text = self.sources.get(path)
        if text is None:
            try:
                text = (self.root / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            self.sources = {**self.sources, path: text}
        from synclint.fixer import split_lines

        return split_lines(text)

    def applicable(self, d: Diagnostic) -> bool:
        """Whether ``--fix`` (with the current ``--unsafe-fixes``) would apply ``d``'s fix: the
        findings marked ``[*]``."""
        return d.fix is not None and (
            d.fix.applicability is Applicability.SAFE or self.unsafe_fixes
        )

    def fixable(self) -> tuple[int, int]:
        """(applicable with the current options, hidden behind --unsafe-fixes)."""
        applicable = hidden = 0
        for d in self.diagnostics:
            if d.fix is None:
                continue
            if d.fix.applicability is Applicability.SAFE or self.unsafe_fixes:
                applicable += 1
            else:
                hidden += 1
        return applicable, hidden


def render(name: str, report: Report) -> str:
    module = importlib.import_module(f"synclint.output.{FORMATS[name]}")
    return module.render(report)


def summary(report: Report) -> str:
    """The closing lines: ``All checks passed!`` or ``Found N errors.`` and what is fixable."""
    count = len(report.diagnostics)
    noun = "error" if count == 1 else "errors"
    if report.fix_mode and report.fixed:
        head = (
            f"Found {count + report.fixed} {('error' if count + report.fixed == 1 else 'errors')} "
            f"({report.fixed} fixed, {count} remaining)."
        )
        if count == 0:
            return head
    elif count == 0 and report.unchecked:
        files = "file" if report.unchecked == 1 else "files"
        return f"No findings, but {report.unchecked} {files} could not be checked (see the errors above)."
    elif count == 0:
        return "All checks passed!"
    else:
        head = f"Found {count} {noun}."
    applicable, hidden = report.fixable()
    hidden_text = (
        f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the "
        "`--unsafe-fixes` option"
    )
    if applicable:
        tail = f"[*] {applicable} fixable with the `--fix` option"
        tail += f" ({hidden_text})." if hidden else "."
    elif hidden:
        tail = f"No fixes available ({hidden_text})."
    else:
        tail = ""
    return head + ("\n" + tail if tail else "")


def use_color(stream) -> bool:
    """Colour on a terminal only; NO_COLOR (non-empty) turns it off and wins over FORCE_COLOR."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
