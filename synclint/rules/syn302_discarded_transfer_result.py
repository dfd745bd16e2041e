"""SYN302 discarded-transfer-result: ``t.to(...)``/``t.cuda()``/``t.cpu()``/``t.pin_memory()`` as a
bare statement.

On a tensor these return a *new* tensor and leave ``t`` where it was, so the statement does nothing
but launch a copy whose result is dropped (an ``nn.Module``'s ``.to()``/``.cuda()`` moves it in place,
which is why the receiver must be known to be a tensor before we say anything).
"""

from __future__ import annotations

import re
from typing import Iterable

import libcst as cst

from synclint.astscan import has_bare_method_call
from synclint.cstwalk import source_order, walk
from synclint.diagnostics import Applicability, Diagnostic
from synclint.model import api
from synclint.model.file_facts import import_resolver, tensor_facts
from synclint.model.tensor_facts import FACTORIES
from synclint.rules._common import method_pattern
from synclint.rules.base import FixKind, Rule, RuleContext
from synclint.textscan import may_be_bare_call

TRANSFERS = frozenset({"to", "cuda", "cpu", "pin_memory"})
#: An attribute named like a transfer, with any gap Python allows after the ``.``.
TRANSFER_ATTRIBUTE = re.compile(method_pattern(*sorted(TRANSFERS)))


class DiscardedTransferResult(Rule):
    code = "SYN302"
    name = "discarded-transfer-result"
    summary = "`t.to(...)`, `t.cuda()`, `t.cpu()`, `t.pin_memory()` as a bare statement"
    fix_kind = FixKind.UNSAFE
    triggers = ("to", "cuda", "cpu", "pin_memory")  # method names: spacing may vary
    trigger_pattern = TRANSFER_ATTRIBUTE.pattern
    #: Only bare ``<expr>.<transfer>(...)`` statements are checked: without one, nothing to say.
    syntax_check = staticmethod(lambda tree, text: has_bare_method_call(tree, TRANSFERS))
    #: The same question asked of the text first: most files call ``.to(`` only inside expressions.
    text_check = staticmethod(lambda text: may_be_bare_call(text, TRANSFER_ATTRIBUTE))

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        facts = tensor_facts(ctx)
        names = import_resolver(ctx)
        for statement in _bare_calls(ctx.module):
            call = statement.value
            func = call.func
            if not (type(func) is cst.Attribute and func.attr.value in TRANSFERS):
                continue
            if facts.facts(func.value, call) is None:
                continue  # maybe an nn.Module (moved in place) or something else: say nothing
            if _fresh_factory_tensor(func.value, names):
                continue  # `torch.zeros(1).cuda()`: a warm-up or a device probe, on purpose
            if _named_fresh_tensor_used_once(ctx, names, func.value, statement):
                continue  # `a = torch.empty(n)` then `a.pin_memory().cuda()`: the same warm-up
            if _probed(ctx, statement):
                continue  # `try: x.to(torch.bfloat16) except ...:`: does the device support it?
            if _before_transfers(func.value) is not func.value:
                # `x.to("cuda").to("cpu")`: a chain of moves thrown away cannot be meant to move
                # anything in place; it is run for what the copies do (a warm-up, a sync).
                continue
            if _local_never_read_again(ctx, func.value, statement):
                continue  # `z = x + y` then `z.cpu()`, and `z` is done: nothing expects it moved
            receiver = ctx.code_for(func.value)
            method = func.attr.value
            if _plain(func.value):
                message = (
                    f"the result of `{receiver}.{method}(...)` is discarded: a tensor is not moved in "
                    f"place, so `{receiver}` is unchanged; assign the result"
                )
            else:
                message = (
                    f"the result of `.{method}(...)` is discarded: the copy is made and thrown away; "
                    "assign the result"
                )
            fix = None
            if _plain(func.value):
                fix = ctx.replace(
                    call,
                    f"{receiver} = {ctx.code_for(call)}",
                    f"Assign the result back to `{receiver}`",
                    Applicability.UNSAFE,
                )
            yield ctx.diagnostic(
                self, call, message, fix=fix, data={"tensor": receiver, "method": method}
            )


def _fresh_factory_tensor(node: cst.BaseExpression, names) -> bool:
    """Is ``node`` a tensor made right there by a ``torch`` factory (``torch.zeros(1)``, also
    moved on the way, ``torch.empty(n).pin_memory()``, or computed from, ``torch.ones(8,
    device="cuda").sum()``)? Nothing else refers to it, so moving it as
    a statement cannot be meant to move something in place: it is done for what the move does
    (creating the CUDA context, allocating, checking that a device works), the idiom
    ``torch.zeros(1).cuda()``, or a blocking read written as one (``.sum().cpu()``)."""
    node = _before_transfers(node)
    while type(node) is cst.Call and type(node.func) is cst.Attribute:
        # `torch.ones(8, device="cuda").sum()`: still a tensor nothing else refers to.
        name = names.qualname(node.func) or ""
        if name.startswith("torch."):
            break
        node = node.func.value
    if type(node) is not cst.Call:
        return False
    name = names.qualname(node.func) or ""
    return name.startswith("torch.") and name.rsplit(".", 1)[-1] in FACTORIES


def _before_transfers(node: cst.BaseExpression) -> cst.BaseExpression:
    """``a.pin_memory()`` -> ``a``: the tensor a chain of transfers starts from."""
    while (
        type(node) is cst.Call
        and type(node.func) is cst.Attribute
        and node.func.attr.value in TRANSFERS
    ):
        node = node.func.value
    return node


def _named_fresh_tensor_used_once(
    ctx: RuleContext, names, receiver: cst.BaseExpression, statement: cst.Expr
) -> bool:
    """Is the receiver (after any transfers) a local name bound once, in the enclosing function,
    to a ``torch`` factory's result, and named nowhere else? Then it is the idiom of
    :func:`_fresh_factory_tensor` spelled over two lines (spdl's CUDA warm-up:
    ``a = torch.empty(shape)`` then ``a.pin_memory().to(device, non_blocking=True)``): nothing
    reads the tensor afterwards, so nothing can expect it to have moved."""
    root = _before_transfers(receiver)
    if type(root) is not cst.Name:
        return False
    around = ctx.positions.ancestors(statement)
    function = next((a for a in around if type(a) is cst.FunctionDef), None)
    if function is None:
        return False
    uses = _NameUses(root.value)
    walk(function.params, uses)  # a parameter of that name is not a fresh local
    walk(function.body, uses)
    if len(uses.names) != 2 or len(uses.bindings) != 1:
        return False  # the binding and this statement, nothing else
    return _fresh_factory_tensor(uses.bindings[0], names)


def _local_never_read_again(
    ctx: RuleContext, receiver: cst.BaseExpression, statement: cst.Expr
) -> bool:
    """Is the receiver a local variable of the enclosing function (bound there, not a parameter,
    global or captured name), or a script's top-level variable no function or class names, that
    no later statement reads (a store, or a question about its shape, reads nothing that the move
    changes), and not inside a loop that reads it again? The bug this rule is for is code that goes on to use the tensor as if it had moved;
    when nothing uses it again, the statement is run for what the copy does (a profiler test's
    device-to-host copy, a synchronization), and nothing can go wrong."""
    if type(receiver) is not cst.Name:
        return False
    function = None
    loop = None
    for ancestor in ctx.positions.ancestors(statement):
        if isinstance(ancestor, (cst.For, cst.While)):
            loop = ancestor  # the outermost loop in the function: all of it may run again
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            function = ancestor
            break
    references = _NameUses(receiver.value)
    if function is None:
        # A script's top-level statement (a transfer benchmark): its variable is the module's,
        # and a function or class of the module that names it counts as naming it elsewhere.
        walk(ctx.module, references)
    elif type(function) is cst.FunctionDef:
        walk(function.params, references)
        if references.names:
            return False  # a parameter: the caller may use it again
        walk(function.body, references)
    else:
        return False
    if references.elsewhere or not references.bound:
        return False
    here = source_order(statement)
    start = here if loop is None else source_order(loop)
    if here is None or start is None:
        return False
    for name in references.names:
        if name is receiver or id(name) in references.stores:
            continue  # a store (`image = ...` in the next turn) reads nothing
        at = source_order(name)
        if at is None or at > here or at > start:
            return False  # named later, or earlier in a loop that comes back to it
    return True


class _NameUses(cst.CSTVisitor):
    """The references to one name in a function (not attribute names or keywords), the values of
    its plain ``name = value`` bindings, whether it is bound at all, and whether it is named in a
    nested function, lambda or class, or declared ``global`` or ``nonlocal`` (then other code may
    read it)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.names: list[cst.Name] = []
        self.stores: set[int] = set()  # ids of the names that are only rebound
        self.bindings: list[cst.BaseExpression] = []
        self.bound = False
        self.elsewhere = False
        self.depth = 0

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            if self.depth:
                self.elsewhere = True
            self.names.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if type(node.value) is cst.Name and node.attr.value in _SAME_ON_ANY_DEVICE:
            return False  # `x.shape`, `x.nelement()`: the same answer wherever `x` is
        walk(node.value, self)  # `x.name` does not name `name`
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        walk(node.value, self)  # nor does `f(name=...)`
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and type(node.targets[0].target) is cst.Name and (
            node.targets[0].target.value == self.name
        ):
            self.bindings.append(node.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if type(node.target) is cst.Name and node.target.value == self.name:
            self.bound = True
            self.stores.add(id(node.target))

    def visit_For(self, node: cst.For) -> None:
        if type(node.target) is cst.Name and node.target.value == self.name:
            self.stores.add(id(node.target))

    def visit_Global(self, node: cst.Global) -> None:
        if any(item.name.value == self.name for item in node.names):
            self.elsewhere = True

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        if any(item.name.value == self.name for item in node.names):
            self.elsewhere = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.depth -= 1

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.depth += 1

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.depth -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.depth += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.depth -= 1


#: Tensor attributes and methods whose answer does not depend on the device.
_SAME_ON_ANY_DEVICE = frozenset(api.METADATA - api.DEVICE_METADATA)


def _plain(node: cst.BaseExpression) -> bool:
    while type(node) is cst.Attribute:
        node = node.value
    return type(node) is cst.Name


class _BareCalls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[cst.Expr] = []

    def visit_Expr(self, node: cst.Expr) -> None:
        if type(node.value) is cst.Call:
            self.found.append(node)


def _probed(ctx: RuleContext, statement: cst.Expr) -> bool:
    """Is ``statement`` written straight in the body of a ``try`` that handles exceptions? There a
    conversion thrown away is a probe (InvokeAI checks that a device can upcast fp8 storage by
    trying it): it is run to see whether it raises, not for its result."""
    line = ctx.positions.parent(statement)
    block = ctx.positions.parent(line) if line is not None else None
    construct = ctx.positions.parent(block) if block is not None else None
    return type(construct) is cst.Try and construct.body is block and bool(construct.handlers)


def _bare_calls(module: cst.Module) -> list[cst.Expr]:
    visitor = _BareCalls()  # a module-level class: one made here would be cyclic garbage
    walk(module, visitor)
    return visitor.found
