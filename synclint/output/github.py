"""``github``: workflow commands that GitHub Actions turns into annotations.

GitHub shows at most 10 annotations of a kind per step, so the ``full`` report follows them in the
log. Data (the message) escapes ``%``, CR and LF; properties also escape ``:`` and ``,``.
``file`` is relative to the repository root (what GitHub matches), wherever synclint ran from.
"""

from __future__ import annotations

import os
from pathlib import Path

from synclint.diagnostics import Diagnostic
from synclint.output import Report, full
from synclint.output.sarif import repository_root


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(d: Diagnostic, file: str | None = None) -> str:
    start, end = d.span.start, d.span.end
    properties = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in (
            ("file", file or d.path),
            ("line", start.line),
            ("col", start.column),
            ("endLine", end.line),
            ("endColumn", end.column),
            ("title", f"synclint ({d.code})"),
        )
    )
    return f"::error {properties}::{escape_data(f'{d.code} {d.message}')}"


def _repository_path(path: str, root: Path) -> str:
    absolute = Path(os.path.abspath(os.path.join(root, path)))
    try:
        return absolute.relative_to(repository_root(root)).as_posix()
    except ValueError:
        return str(absolute)


def render(report: Report) -> str:
    commands = "\n".join(
        annotation(d, _repository_path(d.path, report.root)) for d in report.diagnostics
    )
    text = full.render(report)
    return f"{commands}\n{text}" if commands else text
