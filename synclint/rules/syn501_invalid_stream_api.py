"""SYN501 invalid-stream-api: calls to the stream/event API that fail (or silently do nothing).

``torch.cuda.stream()`` needs a stream, ``torch.cuda.event`` does not exist, ``Event``/``Stream``
reject unknown keywords (``enable_timings=True`` is a ``TypeError`` on the line that was meant to
enable timing), ``record_stream`` on a CPU tensor raises, and ``torch.cuda.current_stream`` passed
without calling it hands a function where a stream is expected. Each is reported at the call; the
fix is offered only where the intent is unambiguous (a typo with one close match, missing ``()``).
"""

from __future__ import annotations

import ast
import difflib
from typing import Iterable

import libcst as cst

from synclint.astscan import bound_names, may_call, named_uncalled
from synclint.diagnostics import Applicability, Diagnostic, Edit, Fix
from synclint.model.bindings import iter_calls
from synclint.model.file_facts import import_resolver, tensor_facts
from synclint.model.torchapi import (
    EVENT_CLASSES,
    GENERIC_STREAM_POSITIONAL,
    STREAM_CLASSES,
    STREAM_CONTEXTS,
    STREAM_POSITIONAL,
    event_parameters,
    has_star_args,
    positional,
    stream_parameters,
)
from synclint.rules.base import FixKind, Rule, RuleContext

_NOT_A_FUNCTION = {"torch.cuda.event": "torch.cuda.Event", "torch.xpu.event": "torch.xpu.Event"}
_STREAM_GETTERS = frozenset(
    {"torch.cuda.current_stream", "torch.cuda.default_stream", "torch.accelerator.current_stream"}
)
#: Methods and functions whose argument must be a stream.
_TAKES_STREAM = frozenset({"wait_stream", "record_stream", "record", "wait", "record_event"})
#: The last names of the calls the rule judges by their qualified name (stream contexts,
#: ``torch.cuda.event``, the ``Event`` and ``Stream`` classes): the import resolver keeps a
#: dotted name's last part, so a call of one of them is spelled with one of these or an alias.
_JUDGED_CALLS = frozenset({"stream", "StreamContext", "event", "Event", "Stream"})
#: The stream getters' last names (one named without a call may be passed uncalled).
_GETTERS = ("current_stream", "default_stream")


def may_misuse_stream_api(tree: ast.Module, text: str) -> bool:
    """Can SYN501 fire here? Only at a call of a judged name (or of a name bound to one), at a
    ``record_stream`` call, or where a stream getter is passed uncalled. The words alone are
    common: vLLM's servers have a ``stream`` flag and ``asyncio`` events in hundreds of files."""
    if "record_stream" in text or any(
        name in text and named_uncalled(name).search(text) for name in _GETTERS
    ):
        return True
    return may_call(text, bound_names(tree, text, _JUDGED_CALLS))


class InvalidStreamApi(Rule):
    code = "SYN501"
    name = "invalid-stream-api"
    summary = "stream/event API misuse: missing stream, `torch.cuda.event`, unknown keywords, ..."
    fix_kind = FixKind.SOMETIMES
    triggers = ("stream", "Stream", "event", "Event")
    #: The calls it judges: stream contexts, ``torch.cuda.event``, ``Event``/``Stream`` classes,
    #: the stream getters passed uncalled, ``record_stream``. As whole words, so that an aliased
    #: import (``from torch.cuda import stream as ctx``) still names them.
    requires_pattern = (
        r"stream(?<!\wstream)(?!\w)",
        r"event(?<!\wevent)(?!\w)",
        r"Event(?!\w)",
        r"Stream(?!\w)",
        "StreamContext",
        r"current_stream(?!\s*\()",  # the getter passed, not called
        r"default_stream(?!\s*\()",
        "record_stream",
    )
    #: ... and one of them called (or the getter passed uncalled, or ``record_stream``).
    syntax_check = staticmethod(may_misuse_stream_api)

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        names = import_resolver(ctx)
        for call in iter_calls(ctx.module):
            qualname = names.qualname(call.func)
            if qualname in STREAM_CONTEXTS and not call.args:
                yield ctx.diagnostic(
                    self,
                    call,
                    f"`{ctx.code_for(call.func)}()` needs the stream to make current; without one it "
                    "raises TypeError (pass `None` explicitly for a no-op)",
                    data={"misuse": "stream-without-argument"},
                )
            elif qualname in _NOT_A_FUNCTION:
                yield self._no_such_function(ctx, call, qualname)
            elif qualname in EVENT_CLASSES:
                params = event_parameters(qualname)
                yield from self._keywords(ctx, call, qualname, params, len(params), "Event")
            elif qualname == "torch.Stream":
                yield from self._generic_stream(ctx, call)
            elif qualname in STREAM_CLASSES:
                params = stream_parameters(qualname)
                yield from self._keywords(ctx, call, qualname, params, STREAM_POSITIONAL, "Stream")
            yield from self._uncalled_stream_getter(ctx, call, qualname)
            if type(call.func) is cst.Attribute and call.func.attr.value == "record_stream":
                yield from self._record_stream_on_cpu(ctx, call)

    def _no_such_function(self, ctx, call: cst.Call, qualname: str) -> Diagnostic:
        right = _NOT_A_FUNCTION[qualname]
        fix = None
        if type(call.func) is cst.Attribute:
            fix = Fix(
                f"Use `{right.rsplit('.', 1)[1]}`",
                Applicability.SAFE,
                (Edit(ctx.span(call.func.attr), "Event"),),
            )
        return ctx.diagnostic(
            self,
            call,
            f"`{qualname}` does not exist (AttributeError); the event class is `{right}`",
            fix=fix,
            data={"misuse": "no-such-function", "replacement": right},
        )

    def _generic_stream(self, ctx, call: cst.Call) -> Iterable[Diagnostic]:
        """``torch.Stream`` takes a device (one positional argument) or a stream's three numbers
        (``torch.Stream(s.stream_id, s.device_index, s.device_type)``), never two or four."""
        count = len(positional(call))
        params = stream_parameters("torch.Stream")
        if count not in GENERIC_STREAM_POSITIONAL and not has_star_args(call):
            yield ctx.diagnostic(
                self,
                call,
                "`Stream` takes one positional argument (device) or three (stream_id, "
                f"device_index, device_type), not {count}; this call raises TypeError",
                data={"misuse": "too-many-arguments"},
            )
        yield from self._unknown_keywords(ctx, call, "Stream", params, "Stream")

    def _keywords(self, ctx, call: cst.Call, qualname: str, params, max_positional: int, kind: str):
        short = qualname.rsplit(".", 1)[1]
        if len(positional(call)) > max_positional and not has_star_args(call):
            yield ctx.diagnostic(
                self,
                call,
                f"`{short}` takes at most {max_positional} positional arguments "
                f"({', '.join(params[:max_positional])}); this call raises TypeError",
                data={"misuse": "too-many-arguments"},
            )
        yield from self._unknown_keywords(ctx, call, short, params, kind)

    def _unknown_keywords(self, ctx, call: cst.Call, short: str, params, kind: str):
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value in params:
                continue
            word = arg.keyword.value
            close = difflib.get_close_matches(word, params, n=2, cutoff=0.7)
            hint = f"; did you mean `{close[0]}`?" if len(close) == 1 else ""
            fix = None
            if len(close) == 1 and close[0] not in _written_keywords(call):
                fix = Fix(
                    f"Rename `{word}` to `{close[0]}`",
                    Applicability.SAFE,
                    (Edit(ctx.span(arg.keyword), close[0]),),
                )
            yield ctx.diagnostic(
                self,
                arg,
                f"`{short}` has no keyword argument `{word}` (TypeError); it accepts "
                f"{', '.join(f'`{p}`' for p in params)}{hint}",
                fix=fix,
                data={"misuse": "unknown-keyword", "keyword": word, "class": kind},
            )

    def _uncalled_stream_getter(self, ctx, call: cst.Call, qualname: str | None):
        names = import_resolver(ctx)
        takes_stream = qualname in STREAM_CONTEXTS or (
            type(call.func) is cst.Attribute and call.func.attr.value in _TAKES_STREAM
        )
        if not takes_stream:
            return
        for arg in call.args:
            getter = names.qualname(arg.value)
            if getter in _STREAM_GETTERS:
                text = ctx.code_for(arg.value)
                yield ctx.diagnostic(
                    self,
                    arg.value,
                    f"`{text}` is passed without calling it: the function is not a stream; "
                    f"write `{text}()`",
                    fix=ctx.replace(arg.value, f"{text}()", f"Call `{text}()`", Applicability.SAFE),
                    data={"misuse": "uncalled-stream-getter"},
                )

    def _record_stream_on_cpu(self, ctx, call: cst.Call):
        receiver = call.func.value
        facts = tensor_facts(ctx).facts(receiver, call)
        if facts is not None and facts.device == "cpu":
            yield ctx.diagnostic(
                self,
                call,
                f"`{ctx.code_for(receiver)}` is a CPU tensor ({facts.how}): `record_stream` only "
                "applies to CUDA tensors and raises here",
                data={"misuse": "record-stream-on-cpu", "tensor": ctx.code_for(receiver)},
            )


def _written_keywords(call: cst.Call) -> set[str]:
    return {a.keyword.value for a in call.args if a.keyword is not None}
