"""``json-lines``: one JSON object per line, the same objects as ``json``."""

from __future__ import annotations

import json

from synclint.output import Report
from synclint.output.json_format import diagnostic_to_json


def render(report: Report) -> str:
    return "\n".join(
        json.dumps(diagnostic_to_json(d, report.root), default=str) for d in report.diagnostics
    )
