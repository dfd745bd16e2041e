"""Reading earlier findings and writing confirmation reports (text, JSON, SARIF).

JSON stays a ruff-like list of findings (so a confirmed report can be fed back with ``--findings``),
each with a ``confirmation`` object; SARIF carries the same object in each result's ``properties``.
The machine (GPU, driver, torch) and the trial count go with every report.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from synclint.confirm.verdict import Confirmation, Verdict
from synclint.diagnostics import Diagnostic, Position, Related, Span


class FindingsError(ValueError):
    """A ``--findings`` file that is not a synclint JSON report."""


def _position(value: Any, where: str) -> Position:
    if not isinstance(value, Mapping) or not isinstance(value.get("row"), int):
        raise FindingsError(f"{where}: expected {{\"row\": int, \"column\": int}}")
    column = value.get("column") if isinstance(value.get("column"), int) else 1
    return Position(value["row"], column)


def _span(item: Mapping[str, Any], where: str) -> Span:
    start = _position(item.get("location"), f"{where}.location")
    end_value = item.get("end_location")
    end = _position(end_value, f"{where}.end_location") if end_value is not None else start
    return Span(start, end)


def diagnostic_from_json(item: Any, index: int, base: Path) -> Diagnostic:
    where = f"finding {index}"
    if not isinstance(item, Mapping):
        raise FindingsError(f"{where}: expected an object")
    code, filename = item.get("code"), item.get("filename")
    if not isinstance(code, str) or not isinstance(filename, str):
        raise FindingsError(f"{where}: needs string fields `code` and `filename`")
    path = filename if os.path.isabs(filename) else str(base / filename)
    related = []
    for number, other in enumerate(item.get("related") or []):
        if not isinstance(other, Mapping):
            raise FindingsError(f"{where}.related[{number}]: expected an object")
        other_name = other.get("filename")
        other_path = None
        if isinstance(other_name, str):
            other_path = other_name if os.path.isabs(other_name) else str(base / other_name)
            if other_path == path:
                other_path = None
        related.append(
            Related(_span(other, f"{where}.related[{number}]"), str(other.get("message", "")), other_path)
        )
    data = item.get("data") if isinstance(item.get("data"), Mapping) else {}
    noqa = item.get("noqa_row") if isinstance(item.get("noqa_row"), int) else None
    span = _span(item, where)
    return Diagnostic(
        code=code,
        message=str(item.get("message", "")),
        path=path,
        span=span,
        related=tuple(related),
        data=dict(data),
        noqa_line=noqa,
        noqa_end_line=noqa,
    )


def read_findings(path: str) -> list[Diagnostic]:
    """Findings from ``synclint --output-format json`` (relative file names: relative to the cwd)."""
    try:
        items = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise FindingsError(f"cannot read {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise FindingsError(f"{path} is not JSON: {error}") from None
    if isinstance(items, Mapping) and isinstance(items.get("findings"), list):
        items = items["findings"]
    if not isinstance(items, list):
        raise FindingsError(f"{path}: expected a JSON list of findings")
    return [diagnostic_from_json(item, i, Path.cwd()) for i, item in enumerate(items)]


# -- writing ---------------------------------------------------------------------------------------


def confirmation_json(
    confirmation: Confirmation, environment: Mapping[str, Any], trials: int
) -> dict[str, Any]:
    data = confirmation.to_json()
    data["trials_requested"] = trials
    data["environment"] = dict(environment)
    return data


def environment_line(environment: Mapping[str, Any], trials: int) -> str:
    parts = [
        environment.get("gpu", "no GPU"),
        f"driver {environment['driver']}" if environment.get("driver") else None,
        f"torch {environment.get('torch', '?')}",
        f"CUDA {environment['cuda_runtime']}" if environment.get("cuda_runtime") else None,
        f"{trials} trials per method",
    ]
    return ", ".join(p for p in parts if p)


def _relative(path: str, root: Path) -> str:
    try:
        return os.path.relpath(path, root)
    except ValueError:
        return path


def render_text(
    pairs: Sequence[tuple[Diagnostic, Confirmation]],
    environment: Mapping[str, Any],
    trials: int,
    root: Path,
) -> str:
    if environment:
        lines = [f"synclint confirm on {environment_line(environment, trials)}", ""]
    else:  # no finding could be run: no device was looked at, so none is named
        lines = ["synclint confirm: no finding could be run, so none ran on a device", ""]
    for d, c in pairs:
        where = f"{_relative(d.path, root)}:{d.span.start.line}:{d.span.start.column}"
        lines.append(f"{where}: {d.code} {c.verdict.value}: {c.summary}")
        for extra in c.evidence[1:4]:
            lines.append(f"    evidence: {extra}")
        for method in c.methods:
            if method.get("error") and c.verdict is not Verdict.CONFIRMED:
                lines.append(f"    {method['method']}: {method['error']}")
            for note in method.get("notes") or []:
                lines.append(f"    note: {note}")
    counts: dict[str, int] = {}
    for _, c in pairs:
        counts[c.verdict.value] = counts.get(c.verdict.value, 0) + 1
    tally = ", ".join(f"{n} {v}" for v, n in counts.items()) or "no findings to confirm"
    lines += ["", f"{len(pairs)} finding{'s' if len(pairs) != 1 else ''}: {tally}."]
    return "\n".join(lines) + "\n"


def render_json(
    pairs: Sequence[tuple[Diagnostic, Confirmation]],
    environment: Mapping[str, Any],
    trials: int,
    root: Path,
) -> str:
    from synclint.output.json_format import diagnostic_to_json

    items = []
    for d, c in pairs:
        item = diagnostic_to_json(d, root)
        item["confirmation"] = confirmation_json(c, environment, trials)
        items.append(item)
    return json.dumps(items, indent=2, default=str) + "\n"


def render_sarif(
    pairs: Sequence[tuple[Diagnostic, Confirmation]],
    environment: Mapping[str, Any],
    trials: int,
    root: Path,
) -> str:
    from synclint.output.sarif import repository_root, sarif_log

    by_id = {id(d): c for d, c in pairs}
    log = sarif_log(
        [d for d, _ in pairs],
        repository_root(root),
        result_properties=lambda d: {
            "confirmation": confirmation_json(by_id[id(d)], environment, trials)
        },
    )
    for run in log.get("runs", []):
        run.setdefault("properties", {})["confirmEnvironment"] = dict(environment)
    return json.dumps(log, indent=2, default=str) + "\n"


RENDERERS = {"text": render_text, "json": render_json, "sarif": render_sarif}
