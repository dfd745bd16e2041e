"""The rule codes, names and defaults as plain data, for the paths that must not import the rules.

A warm run (every file answered by the cache) needs to know which codes exist and which are on by
default to resolve ``--select`` and the configuration, but not the rules themselves: importing them
pulls in libcst and the model, which costs more than the whole warm run otherwise. The registry
(:mod:`synclint.rules.registry`) stays the source of truth; ``tests/test_catalogue.py`` fails when
the two disagree, so adding a rule means adding its line here too.
"""

from __future__ import annotations

#: (code, name, on by default)
CATALOGUE: tuple[tuple[str, str, bool], ...] = (
    ("SYN001", "syntax-error", True),
    ("SYN002", "unused-suppression", False),
    ("SYN101", "unordered-cross-stream-access", True),
    ("SYN102", "free-without-record-stream", True),
    ("SYN103", "sibling-stream-race", True),
    ("SYN104", "stream-waits-on-itself", True),
    ("SYN105", "stream-created-in-loop", True),
    ("SYN201", "event-wait-is-not-host-sync", True),
    ("SYN202", "elapsed-time-without-enable-timing", True),
    ("SYN203", "elapsed-time-before-completion", True),
    ("SYN204", "wait-on-unrecorded-event", True),
    ("SYN205", "host-timer-without-sync", True),
    ("SYN206", "timing-events-on-wrong-stream", True),
    ("SYN301", "non-blocking-d2h-read-before-sync", True),
    ("SYN302", "discarded-transfer-result", True),
    ("SYN303", "non-blocking-from-pageable", True),
    ("SYN304", "pinned-source-mutated-in-flight", True),
    ("SYN501", "invalid-stream-api", True),
    ("SYN502", "sync-during-graph-capture", True),
)

KNOWN_CODES: tuple[str, ...] = tuple(code for code, _, _ in CATALOGUE)
DEFAULT_CODES: tuple[str, ...] = tuple(code for code, _, on in CATALOGUE if on)


def codes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(known codes, codes on by default): from the registry when it is loaded anyway (a cold run,
    or tests that register stand-in rules), else from the table above."""
    import sys

    registry = sys.modules.get("synclint.rules.registry")
    if registry is None:
        return KNOWN_CODES, DEFAULT_CODES
    rules = registry.all_rules()
    return tuple(rules), tuple(code for code, rule in rules.items() if rule.default_enabled)
