"""``full`` (the default): each finding with its code frame, related notes and fix help.

::

    SYN101 [*] `x` is written on stream `s` (line 12) and read on the default stream (line 15) ...
      --> train.py:15:9
       |
    14 |     loss = model(batch)
    15 |     y = x + 1
       |         ^ read here
       |
    note: written on stream `s`
      --> train.py:12:9
       ...
    help: Insert `torch.cuda.current_stream().wait_stream(s)`

A ``[*]`` marks a safe fix (applied by ``--fix``); an unsafe one shows as ``help: ... (unsafe fix:
use --unsafe-fixes)``.
"""

from __future__ import annotations

from synclint.diagnostics import Applicability, Diagnostic, Span
from synclint.output import Report, summary
from synclint.output.style import Style

TAB = 4
MAX_FRAME_LINES = 6


def _display_width(text: str) -> int:
    return len(text.expandtabs(TAB))


def frame(report: Report, path: str, span: Span, label: str, s: Style) -> list[str]:
    """A code frame for ``span``: a line of context, the span's lines, carets under the start."""
    lines = report.source_lines(path)
    location = f"{path}:{span.start.line}:{span.start.column}"
    out = [f"  {s.blue('-->')} {location}"]
    if not lines or not 1 <= span.start.line <= len(lines) + 1:
        return out
    first = max(1, span.start.line - 1)
    last = min(
        len(lines),
        max(span.start.line, span.end.line if span.end.column > 1 else span.end.line - 1),
    )
    last = min(last, span.start.line + MAX_FRAME_LINES - 1)
    width = len(str(max(last, span.start.line)))
    gutter = " " * width
    out.append(f"{gutter} {s.blue('|')}")
    for number in range(first, max(last, span.start.line) + 1):
        text = lines[number - 1] if number <= len(lines) else ""
        out.append(f"{s.blue(str(number).rjust(width))} {s.blue('|')} {text.expandtabs(TAB)}")
        if number == span.start.line:
            prefix = text[: span.start.column - 1]
            if span.end.line == span.start.line:
                body = text[span.start.column - 1 : span.end.column - 1]
            else:
                body = text[span.start.column - 1 :]
            start = _display_width(prefix)
            length = max(1, _display_width(prefix + body) - start)
            carets = s.red("^" * length)
            out.append(
                f"{gutter} {s.blue('|')} {' ' * start}{carets}"
                + (f" {s.red(label)}" if label else "")
            )
    out.append(f"{gutter} {s.blue('|')}")
    return out


def render_one(report: Report, d: Diagnostic, s: Style) -> list[str]:
    safe = report.applicable(d)
    header = f"{s.red(s.bold(d.code))} {s.green('[*] ') if safe else ''}{s.bold(d.message)}"
    out = [header]
    out.extend(frame(report, d.path, d.span, "", s))
    for related in d.related:
        out.append(f"{s.bold(s.cyan('note'))}: {related.message}")
        out.extend(frame(report, related.path or d.path, related.span, "", s))
    if d.fix is not None:
        hint = d.fix.message
        if d.fix.applicability is Applicability.UNSAFE and not report.unsafe_fixes:
            hint += " (unsafe fix: apply with `--fix --unsafe-fixes`)"
        out.append(f"{s.bold(s.cyan('help'))}: {hint}")
    return out


def render(report: Report) -> str:
    s = Style(report.color)
    blocks = ["\n".join(render_one(report, d, s)) for d in report.diagnostics]
    text = "\n\n".join(blocks)
    if report.show_summary:
        text = (text + "\n\n" if text else "") + summary(report)
    return text
