"""SYN102 free-without-record-stream: a query over ``FunctionModel.lifetime_hazards``.

Points at the use on the other stream, with the allocation and the release as related locations.
The unsafe fix inserts ``t.record_stream(<consumer>)`` just before the statement where the last
reference dies (a ``return`` or ``del``), when the tensor has a plain name there.
"""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from synclint.diagnostics import Applicability, Diagnostic, Fix
from synclint.model import LifetimeHazard
from synclint.rules._common import (
    SIDE_STREAM_PATTERN,
    current_stream_call,
    functions,
    is_identifier_path,
    stream_text,
)
from synclint.rules.base import FixKind, Rule, RuleContext


class FreeWithoutRecordStream(Rule):
    code = "SYN102"
    name = "free-without-record-stream"
    summary = "a tensor used on a stream other than its allocation stream is freed before that use is ordered"
    fix_kind = FixKind.UNSAFE
    triggers = ("stream", "Stream")
    requires_pattern = SIDE_STREAM_PATTERN

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        for function in functions(ctx):
            # Tensors handed out by one `yield`/`return` under one name are one finding: a
            # prefetcher's first batch and the loop's next ones (`current = next_gpu`), each
            # allocated apart, are the same missing `record_stream` before that statement.
            handed: dict[tuple[int, int, str], list[LifetimeHazard]] = {}
            for hazard in function.lifetime_hazards:
                if hazard.storage.on_host:
                    continue  # pinned host blocks: copies record their own events (no record_stream on CPU)
                if hazard.how == "handed-off":
                    key = (id(hazard.release.node), id(hazard.use.node), _handed_name(hazard))
                    handed.setdefault(key, []).append(hazard)
                    continue
                yield self.report(ctx, hazard)
            for first, *others in handed.values():
                yield self.report(ctx, first, others)

    def report(
        self, ctx: RuleContext, hazard: LifetimeHazard, others: Iterable[LifetimeHazard] = ()
    ) -> Diagnostic:
        storage = hazard.storage
        alloc = storage.alloc_stream
        use = hazard.use
        name = _handed_name(hazard) if hazard.how == "handed-off" else storage.label
        release_node = hazard.release.node
        if isinstance(release_node, (cst.Return, cst.Del, cst.Assign, cst.AugAssign, cst.AnnAssign)) or hazard.how != "freed":
            release_line = ctx.line(release_node)
            dies = f"dies at line {release_line}"
        else:
            # The function ends: its locals die after its last statement.
            release_line = ctx.span(release_node).end.line
            dies = f"dies when the function returns (after line {release_line})"
        if hazard.how == "handed-off":
            yielded = type(release_node) is cst.Yield
            handed, taker = ("yielded", "consumer") if yielded else ("returned", "caller")
            message = (
                f"`{name}` is allocated on {alloc.label} and {handed} at line {release_line} for use on "
                f"{use.stream.label} without `record_stream`: when the {taker} drops it, its memory goes "
                f"back to {alloc.label}'s pool and may be reused there while {use.stream.label} still uses it"
            )
        else:
            message = (
                f"`{name}` is allocated on {alloc.label} and used on {use.stream.label} (line "
                f"{ctx.line(use.node)}), but its last reference {dies} before "
                f"that use is ordered before later work on {alloc.label}: the caching allocator may "
                f"reuse its memory on {alloc.label} while {use.stream.label} still uses it"
            )
        fix = self.fix(ctx, hazard)
        if fix is not None:
            message += f"; {fix.message}"
        related = []
        for made in (hazard, *others):
            if made.storage.alloc_node is not None:
                label = made.storage.label
                related.append((made.storage.alloc_node, f"`{label}` allocated on {made.storage.alloc_stream.label}"))
        if hazard.how == "freed":
            related.append((hazard.release.node, f"last reference to `{name}` dies here"))
        data = {
            "tensor": name,
            "hazard": "free-without-record-stream",
            "how": hazard.how,
            "alloc": {"stream": alloc.short, "line": ctx.line(storage.alloc_node) if storage.alloc_node else None},
            "use": {"stream": use.stream.short, "line": ctx.line(use.node)},
            "release": {"line": release_line},
        }
        node = use.node
        return ctx.diagnostic(self, node, message, related, fix, data)

    def fix(self, ctx: RuleContext, hazard: LifetimeHazard) -> Optional[Fix]:
        release = hazard.release.node
        if not isinstance(release, (cst.Return, cst.Del, cst.Yield)):
            return None
        # A name still bound to this tensor where the fix goes (`del x` has just unbound x).
        names = [n for n in hazard.names if is_identifier_path(n)]
        if type(release) is cst.Del and not names:
            target = release.target
            names = [ctx.code_for(e.value) for e in target.elements] if type(target) is cst.Tuple else [ctx.code_for(target)]
        if not names or not is_identifier_path(names[0]):
            return None
        name = names[0]
        consumer = hazard.use.stream
        if consumer.is_default:
            target = current_stream_call(ctx)
        else:
            target = stream_text(consumer)
        if target is None:
            return None
        text = f"{name}.record_stream({target})"
        return ctx.insert_before_statement(release, text, f"call `{text}` before line {ctx.line(release)}", Applicability.UNSAFE)


def _handed_name(hazard: LifetimeHazard) -> str:
    """The name a tensor is handed out by where it is (``current`` in ``yield current``, wherever
    it was allocated), else the name it was allocated under."""
    return next((n for n in hazard.names if is_identifier_path(n)), hazard.storage.label)
