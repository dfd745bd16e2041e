"""Confirm every buggy/fixed twin in fixtures/confirm/ and summarize per-rule hit rates.

Each twin pair differs only on lines that keep the numbering: the buggy file marks its flagged line
(``# [flagged SYN101]``) and the other access (``# [first]`` / ``# [related]``). Three runs:

* ``lint``: ``synclint confirm`` on the twins with the real rules (whatever flags them today);
* ``buggy``: the marked findings on the buggy twins (must be confirmed);
* ``fixed``: the same findings transplanted onto the fixed twins (must never be confirmed).

Usage: python benchmarks/confirm_twins.py OUT_DIR [--trials 5]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TWINS = ROOT / "fixtures" / "confirm"
FLAGGED = re.compile(r"#\s*\[flagged (SYN\d{3})\]")
OTHER = re.compile(r"#\s*\[(first|related)\]")


def marker_findings(path: Path) -> list[dict]:
    """The findings a buggy twin's markers describe, in synclint's JSON format."""
    lines = path.read_text(encoding="utf-8").splitlines()
    related, first = [], None
    for number, text in enumerate(lines, start=1):
        match = OTHER.search(text)
        if match:
            column = len(text) - len(text.lstrip()) + 1
            end = len(text.split("#")[0].rstrip()) + 1
            related.append({"filename": str(path), "location": {"row": number, "column": column},
                            "end_location": {"row": number, "column": end}, "message": match.group(1)})
            if match.group(1) == "first":
                first = number
    found = []
    for number, text in enumerate(lines, start=1):
        match = FLAGGED.search(text)
        if not match:
            continue
        column = len(text) - len(text.lstrip()) + 1
        end = len(text.split("#")[0].rstrip()) + 1
        data = {"first": {"line": first}} if first else {}
        found.append({
            "code": match.group(1), "message": f"{match.group(1)} (twin marker)",
            "filename": str(path), "location": {"row": number, "column": column},
            "end_location": {"row": number, "column": end}, "noqa_row": number,
            "related": related, "data": data,
        })
    return found


def transplant(findings: list[dict], fixed: Path) -> list[dict]:
    moved = json.loads(json.dumps(findings))
    for item in moved:
        item["filename"] = str(fixed)
        for other in item["related"]:
            other["filename"] = str(fixed)
    return moved


def pairs(prefix: str = "syn") -> list[tuple[Path, Path]]:
    """Twins whose findings synclint runs on its own (``syn*``) or through ``--entry`` (``entry_*``)."""
    found = sorted(TWINS.glob(f"{prefix}*_buggy.py"))
    return [(b, b.with_name(b.name.replace("_buggy", "_fixed"))) for b in found]


def entry_command(path: Path) -> str:
    """The ``--entry`` an entry twin names in its docstring (``--entry "python ... --steps 3"``)."""
    match = re.search(r'--entry "([^"]+)"', path.read_text(encoding="utf-8"))
    if not match:
        raise ValueError(f"{path} names no --entry")
    return match.group(1)


def confirm(args: list[str], out: Path, name: str) -> tuple[list[dict], float, int]:
    report = out / f"{name}.json"
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "synclint.confirm", "--output-format", "json", "--output-file", str(report), *args],
        cwd=ROOT, capture_output=True, text=True,
    )
    seconds = time.monotonic() - started
    (out / f"{name}.log").write_text(run.stdout + run.stderr, encoding="utf-8")
    items = json.loads(report.read_text(encoding="utf-8")) if report.exists() else []
    return items, seconds, run.returncode


def summarize(
    buggy: list[dict], fixed: list[dict], lint: list[dict], seconds: dict, entries: list[str]
) -> str:
    env = next((i["confirmation"]["environment"] for i in buggy + fixed if i.get("confirmation")), {})
    rows = ["| rule | buggy twin | hit rate (per method) | fixed twin | s per finding (buggy) |",
            "|---|---|---|---|---|"]
    by_code_fixed = {i["code"]: i for i in fixed}
    for item in buggy:
        c = item["confirmation"]
        rates = "; ".join(f"{m['method']} {m['observed']}/{m['trials']}" for m in c["methods"])
        other = by_code_fixed.get(item["code"], {}).get("confirmation", {})
        orates = "; ".join(f"{m['method']} {m['observed']}/{m['trials']}" for m in other.get("methods", []))
        rows.append(f"| {item['code']} | {c['verdict']} | {rates} | {other.get('verdict', '?')} ({orates}) "
                    f"| {c['seconds']:.1f} |")
    lint_rows = [f"- {Path(i['filename']).name}:{i['location']['row']} {i['code']}: "
                 f"{i['confirmation']['verdict']}" for i in lint]
    return "\n".join([
        "# synclint confirm on the twin programs",
        "",
        f"Machine: {env.get('gpu', '?')}, driver {env.get('driver', '?')}, torch {env.get('torch', '?')} "
        f"(CUDA {env.get('cuda_runtime', '?')}), Python {env.get('python', '?')}.",
        f"Wall time: buggy {seconds['buggy']:.1f} s, fixed {seconds['fixed']:.1f} s, lint run {seconds['lint']:.1f} s.",
        "",
        *rows,
        "",
        "Findings from the real rules on the twins (`synclint confirm fixtures/confirm`):",
        *(lint_rows or ["- none"]),
        "",
        "Entry-point twins (`synclint confirm --entry ...`):",
        *(entries or ["- none"]),
        "",
    ])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--trials", type=int, default=5)
    options = parser.parse_args()
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    buggy_findings, fixed_findings = [], []
    for buggy, fixed in pairs():
        found = marker_findings(buggy)
        buggy_findings += found
        fixed_findings += transplant(found, fixed)
    (out / "findings_buggy.json").write_text(json.dumps(buggy_findings, indent=1), encoding="utf-8")
    (out / "findings_fixed.json").write_text(json.dumps(fixed_findings, indent=1), encoding="utf-8")
    trials = ["--trials", str(options.trials)]
    seconds = {}
    buggy, seconds["buggy"], _ = confirm([*trials, "--findings", str(out / "findings_buggy.json")], out, "buggy")
    fixed, seconds["fixed"], _ = confirm([*trials, "--findings", str(out / "findings_fixed.json")], out, "fixed")
    lint, seconds["lint"], _ = confirm([*trials, str(TWINS)], out, "lint")
    entries = []
    for buggy_path, fixed_path in pairs("entry_"):
        found = marker_findings(buggy_path)
        for label, path, items in (("buggy", buggy_path, found), ("fixed", fixed_path, transplant(found, fixed_path))):
            source = out / f"findings_{path.stem}.json"
            source.write_text(json.dumps(items, indent=1), encoding="utf-8")
            alone, _, _ = confirm([*trials, "--findings", str(source)], out, f"{path.stem}_alone")
            run, spent, _ = confirm(
                [*trials, "--findings", str(source), "--entry", entry_command(path)], out, path.stem
            )
            for item, own in zip(run, alone):
                c = item["confirmation"]
                rates = "; ".join(f"{m['method']} {m['observed']}/{m['trials']}" for m in c["methods"])
                entries.append(
                    f"- {path.name}:{item['location']['row']} {item['code']} ({label}): without --entry "
                    f"{own['confirmation']['verdict']}; with --entry {c['verdict']} ({rates}; {c['seconds']:.1f} s)"
                )
    text = summarize(buggy, fixed, lint, seconds, entries)
    (out / "summary.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
