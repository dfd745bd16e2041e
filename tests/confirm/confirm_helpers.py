"""Paths and twin helpers shared by the ``synclint confirm`` tests (a plain module, not a conftest:
``tests/conftest.py`` already owns that module name)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TWINS = ROOT / "fixtures" / "confirm"


def load_twins_module():
    """``benchmarks/confirm_twins.py``: ``pairs()``, ``marker_findings(path)``, ``transplant(...)``."""
    spec = importlib.util.spec_from_file_location("confirm_twins", ROOT / "benchmarks" / "confirm_twins.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module
