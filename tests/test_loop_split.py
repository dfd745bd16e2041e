"""Which loop bodies are walked once per value of a test they ask twice in a pass
(synclint.model.loop_split), and what each side assumes."""

import textwrap

import libcst as cst

from synclint.model.loop_split import loop_switches
from synclint.model.switch_split import assumed_value, asked_key


def _switches(source: str, taken=None) -> list:
    function = cst.parse_module(textwrap.dedent(source)).body[0]
    return list(loop_switches(function, taken).values())


MIXTRAL = """
def forward(self, h, start_pos):
    for i, layer in enumerate(self.layers):
        with torch.cuda.stream(self.side):
            nxt = self.layers[i + 1] if i + 1 < self.n_layers else None
            if nxt is not None:
                h = nxt(h)
        later = None if i + 1 >= self.n_layers else self.layers[i + 1]
        if later:
            h = later(h)
        if i + 1 < self.n_layers:
            h = h * 2
"""


def test_names_set_by_a_conditional_expression_stand_for_its_test():
    [(true, false, ifs)] = _switches(MIXTRAL)
    key = ("expr", "i + 1 < self.n_layers")
    assert true[key] is True and false[key] is False
    assert true[("none", "nxt")] is False and false[("none", "nxt")] is True
    assert true[("truth", "nxt")] is True
    # the `if`s asking it: `if nxt is not None:` and `if i + 1 < self.n_layers:` (not `if later:`)
    assert [type(i.test).__name__ for i in ifs] == ["Comparison", "Comparison"]


def test_the_sides_answer_the_tests_of_the_pass():
    [(true, false, ifs)] = _switches(MIXTRAL)
    for text, on_true in [("nxt is not None", True), ("nxt is None", False), ("nxt", True),
                          ("i + 1 < self.n_layers", True), ("not i + 1 < self.n_layers", False)]:
        test = cst.parse_expression(text)
        assert assumed_value(test, true) is on_true
        assert assumed_value(test, false) is (not on_true)


def test_a_test_of_an_other_text_is_its_own_key():
    # `None if i + 1 >= n else x` stands for `i + 1 >= n`, not `i + 1 < n`: no implication is drawn
    assert asked_key(cst.parse_expression("i + 1 >= self.n_layers"))[0] != ("expr", "i + 1 < self.n_layers")
    [(true, _, _)] = _switches(MIXTRAL)
    assert ("none", "later") not in true


def test_a_test_of_something_the_pass_changes_is_not_split_on():
    assert _switches("""
    def f(xs, ready):
        for x in xs:
            if ready:
                a()
            ready.append(x)
            if ready:
                b()
    """) == []
    assert _switches("""
    def f(xs, cache):
        for x in xs:
            if -1 in cache:
                a()
            cache[0] = x
            if -1 in cache:
                b()
    """) == []
    assert _switches("""
    def f(xs, n):
        for x in xs:
            if n > 0:
                a()
            n = n - 1
            if n > 0:
                b()
    """) == []
    assert _switches("""
    def f(xs, n):
        for x in xs:
            if len(x) > n:
                a()
            if len(x) > n:
                b()
    """) == []


def test_a_name_tested_before_it_is_set_in_the_pass_spoils_the_split():
    assert _switches("""
    def f(layers, n):
        for i in range(n):
            if nxt is not None:
                a()
            nxt = layers[i] if i < n else None
            if nxt is not None:
                b()
    """) == []


def test_a_name_set_under_an_if_does_not_stand_for_the_test():
    [(true, _, _)] = _switches("""
    def f(layers, n, flag):
        for i in range(n):
            if flag:
                nxt = layers[i] if i < n else None
            if nxt is not None:
                a()
            if i < n:
                b()
            if i < n:
                c()
    """)
    assert ("none", "nxt") not in true


def test_the_functions_own_split_is_not_repeated_per_pass():
    source = """
    def f(xs, start_pos):
        for x in xs:
            if start_pos == 0:
                a()
            if start_pos != 0:
                b()
    """
    assert len(_switches(source)) == 1
    assert _switches(source, taken=("eq", "start_pos", "0")) == []
