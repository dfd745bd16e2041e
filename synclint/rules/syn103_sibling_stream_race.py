"""SYN103 sibling-stream-race: hazards between two streams that both waited for a common producer.

The model marks such hazards with ``Hazard.common_producer``; this rule only words them.
"""

from __future__ import annotations

from typing import Iterable

from synclint.diagnostics import Diagnostic
from synclint.rules._common import SIDE_STREAM_PATTERN, describe_access, functions
from synclint.rules.base import FixKind, Rule, RuleContext
from synclint.rules.syn101_unordered_cross_stream_access import hazard_data


class SiblingStreamRace(Rule):
    code = "SYN103"
    name = "sibling-stream-race"
    summary = "two streams that each waited for a common producer, but not for each other, share a tensor"
    fix_kind = FixKind.NONE
    triggers = ("stream", "Stream")
    requires_pattern = SIDE_STREAM_PATTERN

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        for function in functions(ctx):
            for hazard in function.hazards:
                producer = hazard.common_producer
                if producer is None:
                    continue
                first, second = hazard.first, hazard.second
                name = hazard.storage.label
                message = (
                    f"`{name}` is {describe_access(first.mode)} on {first.stream.label} (line "
                    f"{ctx.line(first.node)}) and {describe_access(second.mode)} on "
                    f"{second.stream.label} (line {ctx.line(second.node)}); both streams waited for "
                    f"{producer.stream.label} (line {ctx.line(producer.site.node)}) but not for each "
                    f"other, so nothing orders these two accesses"
                )
                related = [
                    (first.node, f"`{name}` {describe_access(first.mode)} on {first.stream.label}"),
                    (producer.site.node, f"common producer on {producer.stream.label}"),
                ]
                data = dict(hazard_data(hazard, ctx), producer={"stream": producer.stream.short, "line": ctx.line(producer.site.node)})
                yield ctx.diagnostic(self, second.node, message, related, None, data)
