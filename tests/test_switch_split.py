"""The predicates a function's tests ask of a parameter (synclint.model.switch_split): which tests
are one predicate, and which function is walked once per value."""

import libcst as cst
import pytest

from synclint.model.switch_split import assumed_value, predicate, split_predicate


@pytest.mark.parametrize(
    "test, key, positive",
    [
        ("decode", ("truth", "decode"), True),
        ("not decode", ("truth", "decode"), False),
        ("start_pos != 0", ("eq", "start_pos", "0"), False),
        ("start_pos == 0", ("eq", "start_pos", "0"), True),
        ("not start_pos == 0", ("eq", "start_pos", "0"), False),
        ("cache is None", ("none", "cache"), True),
        ("cache is not None", ("none", "cache"), False),
        ('mode == "decode"', ("eq", "mode", '"decode"'), True),
    ],
)
def test_predicate(test, key, positive):
    assert predicate(cst.parse_expression(test)) == (key, positive)


@pytest.mark.parametrize("test", ["a and b", "x.y", "n > 0", "f(x)", "a == b"])
def test_other_tests_ask_no_predicate(test):
    assert predicate(cst.parse_expression(test)) is None


def _function(source: str) -> cst.FunctionDef:
    return cst.parse_module(source).body[0]


def test_a_parameter_tested_twice_is_split_on():
    source = "def f(x, start_pos):\n    if start_pos != 0:\n        a()\n    if start_pos == 0:\n        b()\n"
    assert split_predicate(_function(source)) == ("eq", "start_pos", "0")


def test_a_rebound_parameter_or_a_local_is_not():
    rebound = "def f(x, p):\n    if p:\n        a()\n    p = g()\n    if p:\n        b()\n"
    local = "def f(x):\n    p = g()\n    if p:\n        a()\n    if p:\n        b()\n"
    once = "def f(x, p):\n    if p:\n        a()\n"
    assert split_predicate(_function(rebound)) is None
    assert split_predicate(_function(local)) is None
    assert split_predicate(_function(once)) is None


def test_assumed_value_follows_negation():
    assumed = {("eq", "start_pos", "0"): False}
    assert assumed_value(cst.parse_expression("start_pos != 0"), assumed) is True
    assert assumed_value(cst.parse_expression("start_pos == 0"), assumed) is False
    assert assumed_value(cst.parse_expression("other"), assumed) is None
