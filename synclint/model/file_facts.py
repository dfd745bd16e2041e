"""Per-file caches of the helper analyses, shared by every rule that runs on the file.

A :class:`~synclint.rules.base.RuleContext` lives for one file; the SYN2xx/3xx/5xx rules each need
the import resolver, the binding index and the derived event/tensor facts, so they are built once and
kept on the context. Parents come from a cheap visitor rather than from ``ctx.positions`` so that
clean files never pay for position metadata.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Mapping, TypeVar

import libcst as cst

from synclint.model.bindings import Bindings, build_parent_map
from synclint.model.event_creation import EventCreations
from synclint.model.tensor_facts import TensorFactsResolver
from synclint.model.torchapi import ImportResolver

if TYPE_CHECKING:  # pragma: no cover
    from synclint.rules.base import RuleContext

T = TypeVar("T")


def _cached(ctx: "RuleContext", key: str, build: Callable[[], T]) -> T:
    value = ctx.__dict__.get(key)
    if value is None:
        value = ctx.__dict__[key] = build()
    return value


_UNPARSABLE = object()


def whole_ast(ctx: "RuleContext") -> "ast.Module | None":
    """CPython's tree of the whole file, once per file; None where it does not parse. (The text
    libcst parsed may have left definitions no rule reports on out: the callers of a function,
    say.)"""

    def parse():
        try:
            return ast.parse(ctx.source)
        except (SyntaxError, ValueError):
            return _UNPARSABLE

    tree = _cached(ctx, "_facts_whole_ast", parse)
    return None if tree is _UNPARSABLE else tree


def import_resolver(ctx: "RuleContext") -> ImportResolver:
    return _cached(ctx, "_facts_imports", lambda: ImportResolver(ctx.module, ctx.settings))


def parent_map(ctx: "RuleContext") -> Mapping[cst.CSTNode, cst.CSTNode]:
    return _cached(ctx, "_facts_parents", lambda: build_parent_map(ctx.module))


def bindings(ctx: "RuleContext") -> Bindings:
    return _cached(ctx, "_facts_bindings", lambda: Bindings(ctx.module, parent_map(ctx).get))


def event_creations(ctx: "RuleContext") -> EventCreations:
    return _cached(
        ctx, "_facts_events", lambda: EventCreations(import_resolver(ctx), bindings(ctx))
    )


def tensor_facts(ctx: "RuleContext") -> TensorFactsResolver:
    return _cached(
        ctx, "_facts_tensors", lambda: TensorFactsResolver(import_resolver(ctx), bindings(ctx))
    )


def ancestors(ctx: "RuleContext", node: cst.CSTNode):
    parents = parent_map(ctx)
    current = parents.get(node)
    while current is not None:
        yield current
        current = parents.get(current)
