"""``concise``: one line per finding, ``path:line:col: SYN101 message``."""

from __future__ import annotations

from synclint.output import Report
from synclint.output.style import Style


def render(report: Report) -> str:
    s = Style(report.color)
    lines = []
    for d in report.diagnostics:
        mark = "[*] " if report.applicable(d) else ""
        lines.append(
            f"{s.bold(d.path)}{s.cyan(':')}{d.span.start.line}{s.cyan(':')}{d.span.start.column}"
            f"{s.cyan(':')} {s.red(s.bold(d.code))} {mark}{d.message}"
        )
    return "\n".join(lines)
