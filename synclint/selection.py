"""Rule selection: turning ``--select``/``--ignore``/``--extend-select`` selectors into codes.

A selector is a full code (``SYN101``), a prefix of codes (``SYN1``, ``SYN``) or ``ALL``. Selectors
are resolved against the registry at run time, so a selector that names no registered rule is an
error (exit 2) rather than a silent no-op: a typo in ``--select`` must not make the linter quietly
check nothing.

Selections are layered (configuration file, then command line). In each layer ``select`` replaces
what came before, ``extend-select`` adds and ``ignore`` removes, so ``--select SYN002`` on the command
line re-enables a rule that the configuration ignored, as in ruff.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


class SelectorError(ValueError):
    """A selector that matches no registered rule."""


@dataclass(frozen=True)
class SelectionLayer:
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


def expand(selector: str, known: Iterable[str]) -> frozenset[str]:
    """The codes a selector stands for; raises :class:`SelectorError` if it names none."""
    wanted = selector.strip().upper()
    known = tuple(known)
    if wanted == "ALL":
        return frozenset(known)
    matches = frozenset(code for code in known if wanted and code.startswith(wanted))
    if not matches:
        raise SelectorError(
            f"unknown rule selector `{selector}` (known codes: {', '.join(sorted(known))}; "
            "prefixes such as `SYN1` and `ALL` also work)"
        )
    return matches


def expand_all(selectors: Iterable[str], known: Iterable[str]) -> frozenset[str]:
    known = tuple(known)
    found: set[str] = set()
    for selector in selectors:
        found |= expand(selector, known)
    return frozenset(found)


def resolve(
    layers: Iterable[SelectionLayer], known: Iterable[str], defaults: Iterable[str]
) -> frozenset[str]:
    """Apply the layers in order, starting from the default-enabled rules."""
    known = tuple(known)
    codes = set(defaults)
    for layer in layers:
        if layer.select is not None:
            codes = set(expand_all(layer.select, known))
        codes |= expand_all(layer.extend_select, known)
        codes -= expand_all(layer.ignore, known)
    return frozenset(codes)
