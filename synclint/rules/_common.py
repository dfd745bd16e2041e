"""Shared wording and fix helpers for rules (not a rule module: the registry skips ``_`` names)."""

from __future__ import annotations

import re
from typing import Iterator, Optional

import libcst as cst

from synclint.astscan import GAP
from synclint.model import FunctionModel, StreamValue
from synclint.model.resolver import ImportResolver
from synclint.rules.base import RuleContext
from synclint.textscan import may_pass_true_later

_EXPRESSION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def method_pattern(*names: str) -> str:
    """A trigger pattern for an attribute ``.name`` (how every wait, record and synchronize the
    model knows is spelled: a method of a stream, event or work handle), allowing what Python
    allows between the dot and the name: spaces, ``\\`` continuations, and line breaks and
    comments inside brackets. (``wait`` alone is in every ``await``.)"""
    return rf"\.{GAP}(?:{'|'.join(names)})(?!\w)"


#: A non-blocking copy is, to the model, ``non_blocking=True`` (the name ``True``, perhaps in
#: parentheses: a flag passed on, ``non_blocking=non_blocking``, is not known to be true) or, for
#: ``copy_`` and ``to``, ``True`` as the second positional argument (``dst.copy_(src, True)``,
#: ``x.to(device, True)``). Trigger words, pattern and text check for the rules about non-blocking
#: copies (SYN301, SYN303, SYN304): the pattern is a cheap superset (the keyword, or ``True`` after
#: a comma, where every later argument stands), :func:`may_copy_non_blocking` the exact test on the
#: text. (Patterns are tuples of alternatives, each beginning with a literal: Python's ``re`` finds
#: those fast.)
NON_BLOCKING_TRIGGERS = ("non_blocking", "True")
NON_BLOCKING_KEYWORD = re.compile(rf"non_blocking{GAP}={GAP}(?:\({GAP})*True(?!\w)")
NON_BLOCKING_PATTERN = (NON_BLOCKING_KEYWORD.pattern, rf",{GAP}(?:\({GAP})*True(?!\w)")
#: The calls whose second positional argument the model reads as ``non_blocking``.
POSITIONAL_NON_BLOCKING = re.compile(method_pattern("copy_", "to"))


def may_copy_non_blocking(text: str) -> bool:
    """Does ``text`` hold a copy the model takes for non-blocking? Never False where it does: a
    necessary condition for SYN301, SYN303 and SYN304 (``tests/test_non_blocking_gate.py``)."""
    return NON_BLOCKING_KEYWORD.search(text) is not None or may_pass_true_later(
        text, POSITIONAL_NON_BLOCKING
    )


#: ``a.elapsed_time(b)``: a method of an event, the only spelling the model (and SYN202) reads as
#: timing; the word in a metric's name (``"Train/elapsed_time_ms"``) is not.
ELAPSED_TIME_CALL = method_pattern("elapsed_time")


#: What puts device work on a stream other than the caller's, as SYN101-103 need in the definition
#: they report on (``requires_pattern``): a stream context (``torch.cuda.stream(s)``,
#: ``StreamContext``), ``set_stream``, a ``with`` over something named like a stream, a created or
#: annotated ``Stream``, or an asynchronous collective. ``current_stream()`` and
#: ``default_stream()`` alone are the caller's stream: they do not count.
SIDE_STREAM_PATTERN = (
    r"stream(?<!\wstream)\s*\(",
    r"Stream(?!\w)",
    "StreamContext",
    "set_stream",
    "async_op",
    r"isend(?!\w)",
    r"irecv(?!\w)",
    r"with\W[^\n]*(?i:stream)",
)


def functions(ctx: RuleContext) -> Iterator[FunctionModel]:
    yield from ctx.model.functions


def stream_text(stream: StreamValue) -> Optional[str]:
    """Source text naming ``stream`` at the point of a fix, when it is a plain name or attribute."""
    if stream.is_default:
        return None
    text = stream.short
    return text if _EXPRESSION.match(text) else None


def torch_name(ctx: RuleContext) -> Optional[str]:
    """The local name bound to the ``torch`` module (``torch``, ``th``), or None."""
    resolver = ctx.__dict__.get("_resolver")
    if resolver is None:
        resolver = ImportResolver(ctx.module, ctx.settings.accelerator_wrappers)
        ctx.__dict__["_resolver"] = resolver
    for local, target in resolver.aliases.items():
        if target == "torch":
            return local
    return None


def current_stream_call(ctx: RuleContext) -> Optional[str]:
    torch = torch_name(ctx)
    return f"{torch}.cuda.current_stream()" if torch else None


def enclosing_with(ctx: RuleContext, node: cst.CSTNode) -> Optional[cst.With]:
    for ancestor in ctx.positions.ancestors(node):
        if type(ancestor) is cst.With:
            return ancestor
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            return None
    return None


def inside_loop(ctx: RuleContext, node: cst.CSTNode, stop: cst.CSTNode) -> bool:
    for ancestor in ctx.positions.ancestors(node):
        if ancestor is stop:
            return False
        if isinstance(ancestor, (cst.For, cst.While)):
            return True
    return False


def is_identifier_path(text: str) -> bool:
    return bool(_EXPRESSION.match(text))


def describe_access(mode: str) -> str:
    return "written" if mode == "write" else "read"


def block_stream_text(ctx: RuleContext, block: cst.With) -> Optional[str]:
    """The stream argument of ``with torch.cuda.stream(<arg>):`` when it is a plain name or
    attribute (a fix can then name the same stream before the block)."""
    for item in block.items:
        call = item.item
        if type(call) is cst.Call and call.args:
            text = ctx.code_for(call.args[0].value)
            if is_identifier_path(text):
                return text
    return None


def copy_vs_host_data(ctx: RuleContext, tensor: str, hazard: str, copy_op, copy_access: str,
                      host_node, host_access: str) -> dict:
    """``data`` for a finding between a non-blocking copy and a host access (SYN301, SYN304)."""
    return {
        "tensor": tensor,
        "hazard": hazard,
        "first": {"stream": copy_op.stream.short, "line": ctx.line(copy_op.node), "access": copy_access},
        "second": {"stream": "host", "line": ctx.line(host_node), "access": host_access},
    }


def transfer_destination(ctx: RuleContext, node) -> Optional[str]:
    """Where a transfer provably writes: ``"cpu"`` for ``.cpu()``, ``"cuda"`` for ``.cuda()``, the
    device of ``.to(device)`` when it is known, or the device of ``dst`` in ``dst.copy_(...)``;
    None when that cannot be told. (The model may also infer devices from how a parameter is used;
    that is too weak for the transfer rules' claims.)"""
    from synclint.model.file_facts import tensor_facts
    from synclint.model.torchapi import keyword

    if type(node) is not cst.Call or type(node.func) is not cst.Attribute:
        return None
    method = node.func.attr.value
    if method in ("cpu", "cuda"):
        return method
    facts = tensor_facts(ctx)
    if method == "to":
        target = keyword(node, "device") or (node.args[0] if node.args else None)
        return facts.target_device(target.value, node) if target is not None else None
    if method == "copy_":
        dst = facts.facts(node.func.value, node)
        return dst.device if dst is not None else None
    return None
