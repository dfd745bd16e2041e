"""How the events a rule looks at were created: which constructor, with or without timing.

``elapsed_time`` raises ``ValueError`` unless both events were built with ``enable_timing=True``. The
flag can be set in many ways (keyword, ``torch.cuda.Event(True)``, ``functools.partial``, a factory
function, a list comprehension in ``__init__``) and lost in one easily missed way:
``stream.record_event()`` creates a fresh event *without* timing. :class:`EventCreations` follows an
event expression back to every creation that may have produced it (:mod:`synclint.model.bindings`)
and reports ``None`` when any path is not understood, so callers only conclude on full knowledge.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from synclint.model.bindings import Bindings, Unknown
from synclint.model.torchapi import (
    EVENT_CLASSES,
    ImportResolver,
    event_argument,
    event_timing,
    has_star_args,
    keyword,
    literal_bool,
)


@dataclass(frozen=True)
class EventCreation:
    call: cst.Call  # the call to fix: the constructor, the ``partial(...)`` or ``record_event()``
    kind: str  # "constructor", "partial", "record_event"
    qualname: str
    timing: bool | None
    timing_arg: cst.Arg | None  # the argument that sets enable_timing, if written


class EventCreations:
    def __init__(self, names: ImportResolver, bindings: Bindings) -> None:
        self.names = names
        self.bindings = bindings

    def of(self, expr: cst.BaseExpression, at: cst.CSTNode) -> list[EventCreation] | None:
        """Every creation ``expr`` may come from, or None when some origin is not understood."""
        try:
            found: list[EventCreation] = []
            for leaf in self.bindings.origins(expr, at):
                found.extend(self._classify(leaf, at, 0))
            return found or None
        except Unknown:
            return None

    def _classify(
        self, leaf: cst.BaseExpression, at: cst.CSTNode, depth: int
    ) -> list[EventCreation]:
        if depth > 6 or type(leaf) is not cst.Call:
            raise Unknown
        qualname = self.names.qualname(leaf.func)
        if qualname in EVENT_CLASSES:
            return [
                EventCreation(
                    leaf,
                    "constructor",
                    qualname,
                    event_timing(leaf, qualname),
                    event_argument(leaf, qualname, "enable_timing"),
                )
            ]
        if type(leaf.func) is cst.Attribute and leaf.func.attr.value == "record_event":
            if not leaf.args:
                return [EventCreation(leaf, "record_event", "record_event", False, None)]
            result: list[EventCreation] = []
            for inner in self.bindings.origins(leaf.args[0].value, at):
                result.extend(self._classify(inner, at, depth + 1))
            return result
        partial = self._partial_of_event(leaf, at)
        if partial is not None:
            return [partial]
        result = []
        for inner in self.bindings.call_results(leaf, at):
            result.extend(self._classify(inner, inner, depth + 1))
        return result

    def _partial_of_event(self, call: cst.Call, at: cst.CSTNode) -> EventCreation | None:
        """``make = functools.partial(torch.cuda.Event, enable_timing=True)``; ``make()``."""
        if not isinstance(call.func, (cst.Name, cst.Attribute)):
            return None
        try:
            origins = self.bindings.origins(call.func, at)
        except Unknown:
            return None
        if len(origins) != 1 or type(origins[0]) is not cst.Call:
            return None
        factory = origins[0]
        if self.names.qualname(factory.func) not in {"functools.partial", "partial"}:
            return None
        if not factory.args or self.names.qualname(factory.args[0].value) not in EVENT_CLASSES:
            return None
        qualname = self.names.qualname(factory.args[0].value) or ""
        written = keyword(call, "enable_timing") or keyword(factory, "enable_timing")
        if written is not None:
            timing = literal_bool(written.value)
        elif has_star_args(call) or has_star_args(factory) or len(factory.args) > 1 or call.args:
            timing = None  # positional arguments through a partial: don't guess
        else:
            timing = False
        return EventCreation(
            factory, "partial", qualname, timing, keyword(factory, "enable_timing")
        )
