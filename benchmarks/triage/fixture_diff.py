"""Show, for each SYN1xx fixture, the expected (line, code) set against what synclint finds.

Usage: python benchmarks/triage/fixture_diff.py [fixtures/SYN101 ...]
Prints only fixtures that disagree: missing (expected, not found) and extra (found, not expected),
with the finding's message, so a disagreement can be judged (fixture wrong, or model wrong).
"""

from __future__ import annotations

import sys
from pathlib import Path

from synclint.engine import default_codes, lint_source

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_fixtures import expectations  # noqa: E402


def main(argv: list[str]) -> int:
    dirs = [Path(a).resolve() for a in argv] or sorted((ROOT / "fixtures").glob("SYN1*"))
    disagreements = 0
    for directory in dirs:
        for path in sorted(directory.glob("*.py")):
            text = path.read_text(encoding="utf-8")
            found = lint_source(text, str(path), default_codes())
            got = {(d.span.start.line, d.code) for d in found}
            want = expectations(text)
            if got == want:
                continue
            disagreements += 1
            print(f"== {path.relative_to(ROOT)}")
            for line, code in sorted(want - got):
                print(f"  missing {code} at {line}: {text.splitlines()[line - 1].strip()}")
            for d in found:
                if (d.span.start.line, d.code) not in want:
                    print(f"  extra   {d.code} at {d.span.start.line}: {d.message}")
    print(f"{disagreements} fixture(s) disagree")
    return 1 if disagreements else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
