"""``sarif``: SARIF 2.1.0 for GitHub code scanning (``github/codeql-action/upload-sarif``).

URIs are relative to ``root`` (the repository root when run inside one), in POSIX form, as code
scanning needs; files outside ``root`` get absolute ``file://`` URIs. Regions are 1-based with
columns counted in Unicode code points (``columnKind``), which is what synclint's columns are.
:func:`sarif_log` is shared with ``synclint confirm``, which adds per-result ``properties``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import quote

import synclint
from synclint.diagnostics import Applicability, Diagnostic, Span
from synclint.output import HOME_URL, Report, rule_url

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


def artifact_uri(path: str, root: Path) -> str:
    """``path`` (absolute, or relative to the working directory) as a URI relative to ``root``."""
    absolute = Path(os.path.abspath(path))
    try:
        return quote(absolute.relative_to(Path(os.path.abspath(root))).as_posix())
    except ValueError:
        return absolute.as_uri()


def repository_root(start: Path) -> Path:
    """The closest directory holding ``.git`` (code scanning wants repository-relative URIs),
    else ``start``."""
    start = Path(os.path.abspath(start))
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def _region(span: Span) -> dict[str, int]:
    return {
        "startLine": span.start.line,
        "startColumn": span.start.column,
        "endLine": max(span.end.line, span.start.line),
        "endColumn": span.end.column if span.end.line >= span.start.line else span.start.column,
    }


def _physical(path: str, span: Span, root: Path) -> dict[str, Any]:
    return {"artifactLocation": {"uri": artifact_uri(path, root)}, "region": _region(span)}


def _rules() -> list[dict[str, Any]]:
    from synclint.rules.registry import all_rules

    return [
        {
            "id": code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": f"{code} {rule.name}: {rule.summary}"},
            "helpUri": rule_url(code),
            "help": {"text": f"See {rule_url(code)}"},
            "defaultConfiguration": {"level": "error", "enabled": bool(rule.default_enabled)},
            "properties": {"fix": rule.fix_kind.value, "tags": ["cuda", "concurrency"]},
        }
        for code, rule in all_rules().items()
    ]


def _result(d: Diagnostic, root: Path, index: Mapping[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": d.code,
        "level": "error",
        "message": {"text": d.message},
        "locations": [{"physicalLocation": _physical(d.path, d.span, root)}],
    }
    if d.code in index:
        result["ruleIndex"] = index[d.code]
    if d.related:
        result["relatedLocations"] = [
            {
                "id": number,
                "physicalLocation": _physical(r.path or d.path, r.span, root),
                "message": {"text": r.message},
            }
            for number, r in enumerate(d.related, start=1)
        ]
    if d.fix is not None and d.fix.applicability is Applicability.SAFE:
        result["fixes"] = [
            {
                "description": {"text": d.fix.message},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": artifact_uri(d.path, root)},
                        "replacements": [
                            {
                                "deletedRegion": _region(e.span),
                                "insertedContent": {"text": e.content},
                            }
                            for e in d.fix.edits
                        ],
                    }
                ],
            }
        ]
    return result


def sarif_log(
    diagnostics: Iterable[Diagnostic],
    root: Path | str,
    result_properties: Callable[[Diagnostic], Mapping[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """A SARIF 2.1.0 log of the findings, URIs relative to ``root`` (diagnostic paths are absolute
    or relative to the working directory); ``result_properties(d)`` may add each result's
    ``properties`` bag."""
    root = Path(root)
    rules = _rules()
    index = {rule["id"]: number for number, rule in enumerate(rules)}
    results = []
    for d in diagnostics:
        result = _result(d, root, index)
        extra = result_properties(d) if result_properties else None
        if extra:
            result["properties"] = dict(extra)
        results.append(result)
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "synclint",
                        "version": synclint.__version__,
                        "semanticVersion": synclint.__version__,
                        "informationUri": HOME_URL,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def render(report: Report) -> str:
    return json.dumps(
        sarif_log(report.diagnostics, repository_root(report.root)), indent=2, default=str
    )
