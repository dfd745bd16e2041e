"""SYN002 unused-suppression: reported by the lint pipeline after suppressions are applied."""

from synclint.rules.base import FixKind, Rule


class UnusedSuppressionRule(Rule):
    code = "SYN002"
    name = "unused-suppression"
    summary = "a suppression comment, or a code in one, that suppressed nothing"
    default_enabled = False
    fix_kind = FixKind.SAFE
    builtin = True
