"""Render the triage table and its totals from ``verdicts.tsv`` into ``benchmarks/triage.md``.

``verdicts.tsv`` holds one hand-written row per finding (project, commit, file:line, rule, verdict,
reason, false-positive class, and the runs that reported it: ``1`` the first run, ``2`` and ``3``
the runs after the model fixes); this script only counts and formats, so the totals and the precision in
triage.md always match the rows. Verdicts: ``real`` (a real hazard or bug),
``deliberate`` (deliberate unsynchronized sharing that deserves a suppression comment), ``fp``.

Usage: python benchmarks/triage/render_table.py  (rewrites the part of triage.md between the
``<!-- table -->`` markers)
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRIAGE = HERE.parent / "triage.md"
START, END = "<!-- table -->", "<!-- /table -->"


def load() -> list[dict]:
    with (HERE / "verdicts.tsv").open(encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def precision(rows: list[dict]) -> str:
    if not rows:
        return "n/a"
    good = sum(r["verdict"] in ("real", "deliberate") for r in rows)
    return f"{good}/{len(rows)} = {100 * good / len(rows):.0f}%"


def totals(all_rows: list[dict], run: str) -> list[str]:
    rows = [r for r in all_rows if run in r["runs"].split(",")]
    lines = [f"Run {run}:", "", "| scope | findings | real | deliberate | false positive | precision |", "|---|---|---|---|---|---|"]
    groups: list[tuple[str, list[dict]]] = []
    syn1 = [r for r in rows if r["rule"].startswith("SYN1")]
    for project in sorted({r["project"] for r in rows}):
        groups.append((f"{project}, SYN1xx", [r for r in syn1 if r["project"] == project]))
    for rule in sorted({r["rule"] for r in syn1}):
        groups.append((f"{rule}, all projects", [r for r in syn1 if r["rule"] == rule]))
    groups.append(("**SYN1xx, all projects**", syn1))
    groups.append(("SYN2xx/3xx/5xx, all projects", [r for r in rows if not r["rule"].startswith("SYN1")]))
    groups.append(("everything", rows))
    for name, group in groups:
        c = Counter(r["verdict"] for r in group)
        lines.append(f"| {name} | {len(group)} | {c['real']} | {c['deliberate']} | {c['fp']} | {precision(group)} |")
    return lines


def table(rows: list[dict]) -> list[str]:
    lines = ["| project | commit | file:line | rule | verdict | reason | FP class | runs |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        reason = r["reason"].replace("|", "\\|")
        lines.append(
            f"| {r['project']} | {r['commit']} | `{r['location']}` | {r['rule']} | {r['verdict']} | {reason} | {r['fp_class']} | {r['runs']} |"
        )
    return lines


def main() -> int:
    rows = load()
    runs = sorted({run for r in rows for run in r["runs"].split(",") if run})
    summary = [line for run in runs for line in [*totals(rows, run), ""]][:-1]
    block = "\n".join([START, "", *summary, "", *table(rows), "", END])
    text = TRIAGE.read_text(encoding="utf-8")
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    TRIAGE.write_text(head + block + tail, encoding="utf-8")
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
