"""Helpers for the ``synclint confirm`` tests: the twin programs and their marker findings."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TWINS = ROOT / "fixtures" / "confirm"


def _load_twins_module():
    spec = importlib.util.spec_from_file_location("confirm_twins", ROOT / "benchmarks" / "confirm_twins.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def twins():
    """The benchmark's twin helpers: ``pairs()``, ``marker_findings(path)``, ``transplant(...)``."""
    return _load_twins_module()
