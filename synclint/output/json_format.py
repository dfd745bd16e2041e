"""``json``: a JSON array of findings with ruff's field names, plus ``related`` and ``data``.

:func:`diagnostic_to_json` is also used by ``synclint confirm`` for its own reports.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from synclint.diagnostics import Diagnostic, Position
from synclint.output import Report, rule_url


def _location(p: Position) -> dict[str, int]:
    return {"row": p.line, "column": p.column}


def _filename(path: str, root: Path) -> str:
    return os.path.normpath(os.path.join(root, path)) if path not in ("-", "<string>") else path


def diagnostic_to_json(d: Diagnostic, root: Path | str) -> dict[str, Any]:
    """One finding as a JSON-ready dict; ``filename`` is absolute (``d.path`` is relative to
    ``root``, or absolute)."""
    root = Path(root)
    return {
        "cell": None,
        "code": d.code,
        "message": d.message,
        "filename": _filename(d.path, root),
        "location": _location(d.span.start),
        "end_location": _location(d.span.end),
        "fix": None
        if d.fix is None
        else {
            "applicability": d.fix.applicability.value,
            "message": d.fix.message,
            "edits": [
                {
                    "content": e.content,
                    "location": _location(e.span.start),
                    "end_location": _location(e.span.end),
                }
                for e in d.fix.edits
            ],
        },
        "url": rule_url(d.code),
        "noqa_row": d.noqa_line if d.noqa_line is not None else d.span.start.line,
        "related": [
            {
                "filename": _filename(r.path or d.path, root),
                "location": _location(r.span.start),
                "end_location": _location(r.span.end),
                "message": r.message,
            }
            for r in d.related
        ],
        "data": dict(d.data),
    }


def render(report: Report) -> str:
    return json.dumps(
        [diagnostic_to_json(d, report.root) for d in report.diagnostics], indent=2, default=str
    )
