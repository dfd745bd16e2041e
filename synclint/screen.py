"""Decide, without libcst's parser, that a file has nothing to report.

Why: on a large repository most files that mention streams are correct, and parsing them with
libcst (about 70 µs a line, in its native parser) was the largest single cost of a cold run. CPython
has already built every file's ``ast`` for the prefilter; :mod:`synclint.mirror` turns it into a
tree of the same libcst node classes, shaped as libcst would shape it but without whitespace, in a
fraction of the time. The model and the rules run on that tree unchanged, in a
:class:`ScreenContext` that stops at the first sign of a finding: a rule building a diagnostic or a
fix, or asking for a position or a line (which rules do only to describe something). Where the
model or a rule needs a node's code (conditions, slices and process groups are told apart by their
text), :class:`SourceCode` cuts it from the source, exactly as libcst's ``code_for_node`` would
print it, or, where it cannot be sure of that, stops the screen too.

A stopped screen, and any file where the screen cannot decide (a construct the mirror does not
build, an exception anywhere), means the file is linted again the ordinary way, on libcst's tree, so
every reported diagnostic, position, message and fix is exactly what it was. A file the screen
passes has no diagnostics, which is also what the ordinary run would find as long as the mirror has
libcst's shape and the code is libcst's: ``tests/test_mirror.py`` checks the shape, and
``tests/test_screen_code.py`` the code, on fixtures, generated programs and (when fetched) real
projects; ``tests/test_screen.py`` checks that screening never changes a result.

Files with suppression comments are screened too: a file the screen passes has no findings, so
none of its comments suppressed anything, and SYN002 (which reports the comments that suppressed
nothing) says the same as after the ordinary run. A finding a comment suppresses flags the file,
and the ordinary run applies the comment.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from synclint.mirror import SourceText
from synclint.mirror_code import SourceCode
from synclint.rules.base import RuleContext
from synclint.settings import AnalysisSettings


class Flagged(BaseException):
    """A rule is about to report something, or asks for a node's code that :class:`SourceCode`
    cannot give exactly: the file needs the ordinary run. (A BaseException, so that no
    ``except Exception`` in a rule or the model can swallow it.)"""


class ScreenContext(RuleContext):
    """A rule context on a mirrored tree.

    Everything a rule does to *describe* a finding (its position, its line, a fix, the diagnostic
    itself) ends the screen: the mirror has no whitespace, so none of that would be right, and it
    is not needed to know that the file has something to report. The code of a node, which the
    model compares (``assert not cond`` against ``if cond:``, slices, process groups) and some
    rules read before they decide, is cut from the source by :class:`SourceCode`, exactly as
    libcst's ``code_for_node`` would print it; where that cannot be sure, the screen ends too.
    (Printed from the mirror, which keeps neither parentheses nor spacing, different texts would
    come out equal: ``(a + b) * c`` as ``a + b * c``.)"""

    def __init__(self, path, source, module, settings, source_code: SourceCode) -> None:
        super().__init__(path, source, module, settings)
        self.source_code = source_code

    def code_for(self, node):
        text = self.source_code.code(node)
        if text is None:
            raise Flagged
        return text

    def span(self, node):
        raise Flagged

    def line(self, node):
        raise Flagged

    def statement_lines(self, node):
        raise Flagged

    def diagnostic(self, rule, node, message, related=(), fix=None, data=None):
        raise Flagged

    def insert_before_statement(self, node, text, message, applicability):
        raise Flagged

    def replace(self, node, text, message, applicability):
        raise Flagged


def may_report(
    path: str,
    source: str,
    tree: ast.Module,
    dropped: frozenset[int],
    codes: Iterable[str],
    settings: AnalysisSettings,
) -> bool:
    """False when the rules in ``codes``, run on the mirror of ``tree`` (minus ``dropped``
    top-level statements), report nothing; True when they might, or when the screen cannot tell."""
    from synclint.cstwalk import register
    from synclint.mirror import mirror_module
    from synclint.rules.registry import all_rules

    try:
        text = SourceText(source, record_origins=True)
        module = mirror_module(tree, source, dropped, text)
        register(module)
        ctx = ScreenContext(path, source, module, settings, SourceCode(text, tree))
        rules = all_rules()
        for code in sorted(set(codes)):
            rule_cls = rules.get(code)
            if rule_cls is None or rule_cls.builtin:
                continue
            for _ in rule_cls().check(ctx):
                return True
    except (Flagged, Exception):  # noqa: BLE001 - Unsupported, or anything: the ordinary way
        return True
    finally:
        register(None)
    return False
