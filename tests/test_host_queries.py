"""``host_queries.dominates``: which parts of a conditional construct run on every path."""

from __future__ import annotations

import libcst as cst
import pytest

from synclint.model.host_queries import dominates


def _tree(source: str):
    module = cst.parse_module(source)
    parents: dict = {}
    calls: dict = {}
    stack = [module]
    while stack:
        node = stack.pop()
        for child in node.children:
            parents[child] = node
            stack.append(child)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            calls[node.func.value] = node
    return calls, parents


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("sync()\nwork()\n", True),
        ("if sync():\n    raise E\nwork()\n", True),  # an `if`'s test runs on every path
        ("if flag:\n    sync()\nwork()\n", False),
        ("if a:\n    pass\nelif sync():\n    pass\nwork()\n", False),  # only when `a` fails
        ("x = sync() and other()\nwork()\n", True),  # `and` always evaluates its left operand
        ("x = other() and sync()\nwork()\n", False),
        ("x = sync() if y else z\nwork()\n", False),
        ("x = a if sync() else b\nwork()\n", True),
        ("while sync():\n    pass\nwork()\n", True),  # loops are taken to run
        ("try:\n    pass\nexcept E:\n    sync()\nwork()\n", False),
        # Where CUDA is unavailable nothing ran on a device: the body of such a test counts.
        ("if torch.cuda.is_available():\n    sync()\nwork()\n", True),
        ("if cuda.is_initialized():\n    sync()\nelse:\n    pass\nwork()\n", True),
        ("if torch.cuda.is_available():\n    pass\nelse:\n    sync()\nwork()\n", False),
        ("if not torch.cuda.is_available():\n    sync()\nwork()\n", False),
        ("if torch.cuda.is_available(0):\n    sync()\nwork()\n", False),
        ("if mps.is_available():\n    sync()\nwork()\n", False),
    ],
)
def test_dominates(source, expected):
    calls, parents = _tree(source)
    assert dominates(calls["sync"], calls["work"], parents) is expected
