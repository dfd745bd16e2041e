"""Lint each false-positive reproducer in ``benchmarks/triage/fp_classes/`` and say whether it still
reproduces. Every file there is correct code (see the triage table for the real finding it was cut
from), so any finding on it is a false positive of the class its name describes.

Usage: python benchmarks/triage/check_fp_classes.py   (exit 1 while any class still reproduces)
"""

from __future__ import annotations

from pathlib import Path

from synclint.engine import lint_source

HERE = Path(__file__).resolve().parent / "fp_classes"


def main() -> int:
    still = 0
    for path in sorted(HERE.glob("*.py")):
        found = [d for d in lint_source(path.read_text(encoding="utf-8"), str(path)) if d.code.startswith("SYN1")]
        status = "reproduces" if found else "fixed"
        still += bool(found)
        print(f"{status:10} {path.name}")
        for d in found:
            print(f"           {d.span.start.line}: {d.code} {d.message[:150]}")
    print(f"{still} class(es) still reproduce")
    return 1 if still else 0


if __name__ == "__main__":
    raise SystemExit(main())
