"""Per-binding liveness (synclint.rules._liveness): a clock reading bound to a name is dead when the
name is bound again before anything reads it, and live on any path that may read it first."""

import textwrap

import libcst as cst
import pytest

from synclint.rules._liveness import live_after_each


def _binding_live(source: str, name: str = "t1", marker: str = "# here") -> bool | None:
    """Liveness after the assignment on the line ending with ``marker``."""
    module = cst.parse_module(textwrap.dedent(source))
    function = module.body[0]
    live = live_after_each(function, name)
    if live is None:
        return None
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    line = next(i for i, text in enumerate(textwrap.dedent(source).splitlines(), 1) if text.endswith(marker))
    assigns = [n for n, p in positions.items() if type(n) is cst.Assign and p.start.line == line]
    assert len(assigns) == 1
    return live[id(assigns[0])]


@pytest.mark.parametrize(
    "source, live",
    [
        ("def f():\n    t1 = now()  # here\n    t1 = now()\n    return t1\n", False),
        ("def f():\n    t1 = now()  # here\n    return t1\n", True),
        # Read at the top of the next pass of the loop.
        ("def f(xs):\n    for x in xs:\n        if x:\n            print(t1)\n        t1 = now()  # here\n", True),
        # Rebound first thing in every pass, and never read after the loop.
        ("def f(xs):\n    for x in xs:\n        t1 = now()  # here\n        if x:\n            break\n    return 0\n", False),
        # A `break` leaves the loop for code that reads it.
        ("def f(xs):\n    for x in xs:\n        t1 = now()  # here\n        if x:\n            break\n    return t1\n", True),
        # Rebound on one arm only: the other may reach the read.
        ("def f(c):\n    t1 = now()  # here\n    if c:\n        t1 = 0\n    return t1\n", True),
        # An exception handler may read it.
        ("def f():\n    try:\n        t1 = now()  # here\n        t1 = later()\n    except E:\n        print(t1)\n", True),
        # `del` ends the binding.
        ("def f():\n    t1 = now()  # here\n    del t1\n    return 0\n", False),
        # The timed loop rebinds it before reading it, and may not run at all.
        ("def f(xs):\n    t1 = now()  # here\n    for x in xs:\n        t1 = now()\n        print(t1)\n    return 0\n", False),
        # `while` tests may read it.
        ("def f():\n    t1 = now()  # here\n    while t1 < 3:\n        t1 = now()\n", True),
    ],
)
def test_liveness_of_one_binding(source, live):
    assert _binding_live(source) is live


def test_a_name_a_closure_reads_is_always_live():
    source = "def f():\n    t1 = now()  # here\n    g = lambda: t1\n    t1 = 0\n    return g\n"
    assert _binding_live(source) is None


def test_a_global_name_is_always_live():
    source = "def f():\n    global t1\n    t1 = now()  # here\n    t1 = 0\n"
    assert _binding_live(source) is None
