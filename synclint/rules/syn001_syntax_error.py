"""SYN001 syntax-error: reported by the lint pipeline when a file cannot be parsed."""

from synclint.rules.base import FixKind, Rule


class SyntaxErrorRule(Rule):
    code = "SYN001"
    name = "syntax-error"
    summary = "a file that cannot be parsed (reported with position and reason; the run goes on)"
    fix_kind = FixKind.NONE
    builtin = True
