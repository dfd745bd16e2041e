"""Run synclint over the fetched real projects and collect every finding for triage.

The projects live in ``corpora/<name>`` (ignored by git; see ``benchmarks/triage.md`` for how they
were fetched and at which commit). For each project this runs the real command line,
``python -m synclint check corpora/<name> --config <cfg> --output-format json --no-cache --exit-zero``
(the config only turns ``respect-gitignore`` off, because ``corpora/`` is git-ignored here), and writes
``corpora/_results/<name>.json``; then it prints one line per finding (project, file:line, code,
message) so that every finding can be read and judged by hand.

Usage: python benchmarks/triage/run_corpora.py [name ...]   (default: every folder in corpora/)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT / "corpora"
RESULTS = CORPORA / "_results"
CONFIG = CORPORA / "_cfg" / "synclint.toml"


def run(name: str) -> list[dict]:
    CONFIG.parent.mkdir(parents=True, exist_ok=True)
    CONFIG.write_text("respect-gitignore = false\n")
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "synclint", "check", str(CORPORA / name), "--config", str(CONFIG), "--output-format", "json",
         "--no-cache", "--exit-zero"],
        capture_output=True, text=True, cwd=ROOT,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"synclint failed on {name} (exit {proc.returncode})")
    findings = json.loads(proc.stdout or "[]")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(findings, indent=1))
    sys.stderr.write(f"{name}: {len(findings)} findings in {elapsed:.1f}s\n")
    return findings


def main(argv: list[str]) -> int:
    names = argv or sorted(p.name for p in CORPORA.iterdir() if p.is_dir() and not p.name.startswith("_"))
    for name in names:
        for f in run(name):
            rel = Path(f["filename"]).resolve().relative_to(CORPORA / name)
            print(f"{name}\t{rel}:{f['location']['row']}\t{f['code']}\t{f['message']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
