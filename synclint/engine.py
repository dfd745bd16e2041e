"""Lint one file's text: parse, build the model lazily, run the selected rules.

This is the core the CLI, the cache, the fixer and ``confirm`` all call. It never raises for bad
input: a parse failure becomes SYN001. A rule that crashes is a bug in synclint, not in the user's
code: :func:`analyse` isolates it (the other rules still run) and returns it as a :class:`RuleCrash`,
which the pipeline reports on standard error and turns into exit status 2. :func:`lint_source`, the
small API used by tests, re-raises it so that a crashing rule fails loudly there.
(Decoding bytes, suppressions, SYN002, and file discovery are layered on top in the pipeline.)
"""

from __future__ import annotations

import re
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import libcst as cst

from synclint.astscan import python_parse
from synclint.cstwalk import register
from synclint.diagnostics import Diagnostic, unparsable
from synclint.expected_failures import outside_expected_failures
from synclint.rules.base import Rule, RuleContext
from synclint.rules.registry import all_rules
from synclint.settings import AnalysisSettings


def default_codes() -> frozenset[str]:
    return frozenset(code for code, rule in all_rules().items() if rule.default_enabled)


@dataclass(frozen=True)
class RuleCrash:
    """An exception raised inside one rule's ``check`` on one file."""

    code: str
    path: str
    summary: str  # "ValueError: ..."
    traceback: str
    error: BaseException | None = field(default=None, compare=False, repr=False)


@dataclass
class Analysis:
    diagnostics: list[Diagnostic]
    crashes: list[RuleCrash] = field(default_factory=list)
    parsed: bool = True


_LIBCST_AT = re.compile(r"error at (\d+):(\d+):\s*")


def syntax_error_diagnostic(
    path: str, error: cst.ParserSyntaxError, python_error: SyntaxError | None = None
) -> Diagnostic:
    """SYN001 with CPython's message and position when CPython rejects the file too
    (``python_error``: far more readable than the parser generator's, "'(' was never closed"
    instead of "expected one of (, ), *, +, ..."), else libcst's (a construct libcst cannot parse
    yet)."""
    if python_error is not None and python_error.lineno:
        return _python_syntax_error(path, python_error)
    raw = (error.message or "").replace("parser error: ", "", 1)
    at = _LIBCST_AT.search(raw)
    if at:
        line, column = int(at.group(1)), int(at.group(2)) + 1
        raw = raw[: at.start()] + raw[at.end() :]
    else:
        line, column = max(1, error.raw_line), max(1, error.raw_column + 1)
    reason = " ".join(raw.split()) or "invalid syntax"
    return unparsable(path, line, column, f"cannot parse: {reason}")


def _python_syntax_error(path: str, error: SyntaxError) -> Diagnostic:
    """SYN001 with CPython's message and position."""
    return unparsable(
        path, max(1, error.lineno or 1), max(1, error.offset or 1), f"syntax error: {error.msg}"
    )


def run_rules(
    path: str,
    source: str,
    module: cst.Module,
    codes: Iterable[str],
    settings: AnalysisSettings,
    crashes: list[RuleCrash] | None = None,
    parsed: str | None = None,
) -> list[Diagnostic]:
    """Run the selected (non-builtin) rules. A crash is appended to ``crashes`` when given,
    else re-raised. ``parsed`` is the text ``module`` was parsed from when it is not ``source``."""
    rules = all_rules()
    ctx = RuleContext(path, source, module, settings, parsed)
    found: list[Diagnostic] = []
    for code in sorted(set(codes)):
        rule_cls = rules.get(code)
        if rule_cls is None or rule_cls.builtin:
            continue
        rule: Rule = rule_cls()
        try:
            found.extend(d for d in rule.check(ctx) if d.code == code)
        except Exception as error:  # noqa: BLE001 - a rule bug must not stop the run
            if crashes is None:
                raise
            crashes.append(
                RuleCrash(
                    code=code,
                    path=path,
                    summary=f"{type(error).__name__}: {error}",
                    traceback=traceback.format_exc(),
                    error=error,
                )
            )
    # One finding per code, place and message: a hazard reached along two paths (its last
    # reference dying at the end of a block and at the return) is one thing for the reader.
    unique: dict[tuple, Diagnostic] = {}
    for diagnostic in outside_expected_failures(found, ctx):
        unique.setdefault((diagnostic.code, diagnostic.span, diagnostic.message), diagnostic)
    return sorted(unique.values(), key=Diagnostic.sort_key)


def _no_validation(self: cst.CSTNode) -> None:
    return None


@contextmanager
def _parsing_without_validation() -> Iterator[None]:
    """Skip libcst's per-node ``_validate`` while its native parser builds a tree.

    Every node libcst constructs runs ``__post_init__`` -> ``_validate`` in Python: about a fifth of a
    parse. A tree from the parser is valid by construction (libcst's own source says as much next to
    that call), so the checks only matter for nodes built by hand, and synclint builds none (fixes
    are text edits). The hook is restored at once; if libcst ever moves it, nothing is patched."""
    original = cst.CSTNode.__dict__.get("__post_init__")
    if original is None:
        yield
        return
    cst.CSTNode.__post_init__ = _no_validation
    try:
        yield
    finally:
        cst.CSTNode.__post_init__ = original


def parse_module(text: str) -> cst.Module:
    """``libcst.parse_module`` without re-validating the parser's own output."""
    with _parsing_without_validation():
        return cst.parse_module(text)


#: CPython's tokenizer limits: past them it refuses a file that has no syntax error otherwise.
_CPYTHON_LIMITS = frozenset({"too many nested parentheses", "too many levels of indentation"})


def _beyond_cpython_limits(path: str, error: SyntaxError | None) -> Diagnostic | None:
    """SYN001 for a file CPython refused (``error``: its complaint, None when it gave up, see
    :func:`~synclint.astscan.python_parse`) because of its nesting (more than 200 brackets deep,
    an expression its parser cannot hold): CPython could not run it either. libcst is not asked:
    its native parser has no such limits and overflows its stack on such a file (a segmentation
    fault, from about 2,000 nested brackets). None when CPython refused it for another reason."""
    if error is None:  # RecursionError or MemoryError: the parser's own stack guard
        return unparsable(
            path, 1, 1, "cannot parse: too deeply nested to parse (CPython gives up on it too)"
        )
    return _python_syntax_error(path, error) if error.msg in _CPYTHON_LIMITS else None


def analyse(
    source: str,
    path: str = "<string>",
    codes: Iterable[str] | None = None,
    settings: AnalysisSettings | None = None,
    sliced: str | None = None,
    python_parsed: bool = False,
) -> Analysis:
    """Parse and run the rules, isolating rule crashes.

    ``sliced`` is the text to parse when it is not ``source`` itself: the file with the definitions
    no rule can report on blanked out (:mod:`synclint.slicing`; same lines, same columns). Rules
    still see ``source`` as the file's text. ``python_parsed`` says CPython is known to parse
    ``source``; otherwise it is asked first, once: its verdict keeps libcst from files nested
    beyond CPython's limits, and its message is SYN001's when libcst rejects the file too."""
    settings = settings or AnalysisSettings()
    selected = default_codes() if codes is None else frozenset(codes)
    python_error = None
    if not python_parsed:
        tree, python_error = python_parse(source, path)
        too_deep = None if tree is not None else _beyond_cpython_limits(path, python_error)
        del tree  # only CPython's verdict is needed, not its tree
        if too_deep is not None:
            return Analysis([too_deep] if "SYN001" in selected else [], parsed=False)
    try:
        module = parse_module(source if sliced is None else sliced)
    except cst.ParserSyntaxError as error:
        found = [syntax_error_diagnostic(path, error, python_error)] if "SYN001" in selected else []
        return Analysis(found, parsed=False)
    except (RecursionError, MemoryError) as error:
        # Pathologically deep nesting: report it like a syntax error rather than crash.
        reason = "too deeply nested to parse" if isinstance(error, RecursionError) else "too large"
        found = [unparsable(path, 1, 1, f"cannot parse: {reason}")] if "SYN001" in selected else []
        return Analysis(found, parsed=False)
    crashes: list[RuleCrash] = []
    register(module)
    found = run_rules(path, source, module, selected, settings, crashes, parsed=sliced)
    return Analysis(found, crashes)


def lint_source(
    source: str,
    path: str = "<string>",
    codes: Iterable[str] | None = None,
    settings: AnalysisSettings | None = None,
) -> list[Diagnostic]:
    """Lint Python source text and return its diagnostics (unsuppressed), sorted.

    A crashing rule raises here (it is a bug to fix); the pipeline reports crashes instead."""
    result = analyse(source, path, codes, settings)
    if result.crashes:
        crash = result.crashes[0]
        raise RuntimeError(f"rule {crash.code} crashed on {path}: {crash.summary}") from crash.error
    return result.diagnostics
