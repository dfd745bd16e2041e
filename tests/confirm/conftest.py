"""Fixtures for the ``synclint confirm`` tests."""

from __future__ import annotations

import pytest
from confirm_helpers import load_twins_module


@pytest.fixture(scope="session")
def twins():
    """The benchmark's twin helpers: ``pairs()``, ``marker_findings(path)``, ``transplant(...)``."""
    return load_twins_module()
