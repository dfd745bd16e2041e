"""Discovers rule modules in ``synclint/rules/`` and indexes their rules by code.

Every module in this package except ``base`` and ``registry`` is imported once; every
:class:`~synclint.rules.base.Rule` subclass defined in it with a ``code`` is registered.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from synclint.rules.base import Rule

_SKIP = {"base", "registry"}


@lru_cache(maxsize=None)
def all_rules() -> dict[str, type[Rule]]:
    """All registered rules, keyed by code, in code order."""
    import synclint.rules as package

    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in _SKIP or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Rule)
                and value is not Rule
                and getattr(value, "code", None)
                and value.__module__ == module.__name__
            ):
                if value.code in found:
                    raise RuntimeError(f"rule code {value.code} is registered twice")
                found[value.code] = value
    return dict(sorted(found.items()))


def rule_by_code(code: str) -> type[Rule] | None:
    return all_rules().get(code)
