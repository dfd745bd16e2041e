"""Which of an object's attributes ``__init__`` leaves ``None`` only where there is no device.

Why: classes that may run on the CPU make their streams and events in the GPU arm of one test
and set them to ``None`` in the other (``if self.device.type == "cuda": self.copy_stream =
torch.cuda.Stream() ... else: self.copy_stream = None``). A later ``if self.copy_stream and
self.done:`` then fails only where there is no device, so nothing is pending on the device on
that path and what the arm orders holds after it, as after ``if torch.cuda.is_available():``.
The interpreter's join of ``__init__``'s arms only says "a stream or ``None``", not when.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from synclint.model.resolver import dotted, is_self_attribute, without_not


def nones_only_without_a_device(
    init: cst.FunctionDef, device_test: Callable[[cst.BaseExpression], bool]
) -> dict[str, bool]:
    """For each ``self.X`` that ``init`` sets to ``None``: is every such assignment in an arm that
    runs only without a device (the ``else`` of a test ``device_test`` accepts, or the body of
    its ``not``)? Attributes never set to ``None`` are absent."""
    found: dict[str, bool] = {}
    _walk(init.body, False, device_test, found)
    return found


def _walk(
    suite: cst.BaseSuite,
    without_device: bool,
    device_test: Callable[[cst.BaseExpression], bool],
    found: dict[str, bool],
) -> None:
    lines = suite.body if type(suite) is cst.IndentedBlock else (suite,)
    for stmt in lines:
        if type(stmt) is cst.If:
            _walk_if(stmt, without_device, device_test, found)
        elif isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in stmt.body:
                _note_none(small, without_device, found)
        elif isinstance(stmt, cst.BaseCompoundStatement):
            # Loops, `with` and `try`: their blocks run under the same device as around them.
            for child in stmt.children:
                if isinstance(child, cst.BaseSuite):
                    _walk(child, without_device, device_test, found)
                elif isinstance(child, (cst.ExceptHandler, cst.Else, cst.Finally)):
                    _walk(child.body, without_device, device_test, found)


def _walk_if(
    stmt: cst.If,
    without_device: bool,
    device_test: Callable[[cst.BaseExpression], bool],
    found: dict[str, bool],
) -> None:
    test, negated = without_not(stmt.test)
    present = device_test(test)
    _walk(stmt.body, without_device or (present and negated), device_test, found)
    # The arms after a device test that failed run without a device (`elif`s included).
    rest = without_device or (present and not negated)
    if type(stmt.orelse) is cst.If:
        _walk_if(stmt.orelse, rest, device_test, found)
    elif stmt.orelse is not None:
        _walk(stmt.orelse.body, rest, device_test, found)


def _note_none(small: cst.BaseSmallStatement, without_device: bool, found: dict[str, bool]) -> None:
    if type(small) is cst.Assign:
        targets = [t.target for t in small.targets]
    elif type(small) is cst.AnnAssign and small.value is not None:
        targets = [small.target]
    else:
        return
    value = small.value
    if not (type(value) is cst.Name and value.value == "None"):
        return
    for target in targets:
        if is_self_attribute(target):
            key = dotted(target)
            found[key] = found.get(key, True) and without_device
