"""Linting one file: bytes to text, the prefilter, the engine, suppressions and SYN002.

The prefilter decides, cheapest test first, how little of a file the engine needs: each rule's
trigger words, patterns, requirement and text check on the text; CPython's ``ast`` (every file is
parsed once, for SYN001: a file no rule's words occur in, or whose rules' text checks all say no,
only through CPython's symbol table, which needs no tree) and the rules' syntax checks on it;
then :mod:`synclint.slicing` blanks the top-level definitions no remaining rule could report on.
Linting with ``prefilter=False`` skips all of it and must give the same diagnostics
(``tests/test_prefilter_differential.py``).

Everything that can go wrong with a file (undecodable bytes, NUL bytes, bad syntax) becomes SYN001
for that file; an unreadable file or a crashing rule becomes an *error* (reported on standard error,
exit status 2) and the run goes on with the other files.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from synclint import catalogue
from synclint.astscan import compiles, python_parse
from synclint.diagnostics import Diagnostic, unparsable
from synclint.settings import AnalysisSettings
from synclint.slicing import Check, Trigger, blank, irrelevant_definitions

if TYPE_CHECKING:  # pragma: no cover
    from synclint.engine import Analysis
from synclint.suppressions import (
    apply_suppressions,
    parse_directives,
    unknown_codes,
    unused_suppressions,
)


@dataclass(frozen=True)
class FileSettings:
    """What to check in one file: the enabled codes (after per-file ignores) and the analysis
    options. Picklable, so it travels to worker processes; part of the cache key."""

    codes: frozenset[str]
    settings: AnalysisSettings = field(default_factory=AnalysisSettings)

    def cache_key(self) -> str:
        return f"{sorted(self.codes)!r}|{self.settings.cache_key()}"


@dataclass
class FileResult:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    source: str | None = None  # the (final) text, kept for code frames
    encoding: str = "utf-8"
    errors: list[str] = field(default_factory=list)  # make the run exit 2
    warnings: list[str] = field(default_factory=list)
    fixed: int = 0
    original: str | None = None  # the text before fixes, when fixes changed it

    @property
    def cacheable(self) -> bool:
        return not self.errors


@dataclass(frozen=True)
class Decoded:
    text: str | None
    encoding: str
    problem: Diagnostic | None = None


def _byte_position(data: bytes, offset: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, offset) + 1
    line = data.count(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return line, column


def _undecodable(
    path: str, line: int, column: int, message: str, encoding: str = "utf-8"
) -> Decoded:
    return Decoded(None, encoding, unparsable(path, line, column, message))


#: Byte-order marks of the encodings Python never reads source in (longest first: UTF-32 LE's
#: mark begins with UTF-16 LE's). Editors on Windows save files so; the text is readable, but
#: ``python file.py`` fails ("source code cannot contain null bytes").
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32 little-endian"),
    (b"\x00\x00\xfe\xff", "UTF-32 big-endian"),
    (b"\xff\xfe", "UTF-16 little-endian"),
    (b"\xfe\xff", "UTF-16 big-endian"),
)


def decode(data: bytes, path: str) -> Decoded:
    """Bytes to text, honouring a BOM and a PEP 263 coding line; problems become SYN001."""
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            message = (
                f"file is encoded as {name} (it starts with that byte-order mark): Python reads "
                "source as UTF-8 and cannot run it; re-encode it as UTF-8"
            )
            return _undecodable(path, 1, 1, message, name.split(" ")[0].lower())
    if b"\x00" in data:
        line, column = _byte_position(data, data.index(b"\x00"))
        message = "file contains NUL bytes: this is not Python source (binary file?)"
        return _undecodable(path, line, column, message)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        line = getattr(error, "lineno", None) or 1
        reason = error.msg if hasattr(error, "msg") else error
        return _undecodable(path, line, 1, f"invalid encoding declaration: {reason}")
    try:
        return Decoded(data.decode(encoding), encoding)
    except UnicodeDecodeError as error:
        line, column = _byte_position(data, error.start)
        byte = data[error.start : error.start + 1].hex()
        name = "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding
        hint = (
            "declare the file's encoding with a PEP 263 coding line or re-encode it as UTF-8"
            if name == "UTF-8"
            else "fix the coding line or the file's bytes"
        )
        message = f"not valid {name}: byte 0x{byte} cannot be decoded; {hint}"
        return _undecodable(path, line, column, message, encoding)


@lru_cache(maxsize=64)
def _triggers_for(
    codes: frozenset[str],
) -> tuple[tuple[str, Trigger], ...] | None:
    """(code, trigger words and patterns) of each enabled rule; None when some enabled rule has no
    trigger words (then there is no prefilter). Rules with the same test share one object, so that
    its searches are done once per text."""
    from synclint.rules.registry import all_rules  # only once a file is really linted

    table = []
    shared: dict[tuple, Trigger] = {}
    for code in sorted(codes):
        rule = all_rules().get(code)
        if rule is None or rule.builtin:
            continue
        if not rule.triggers:
            return None
        key = (
            tuple(rule.triggers),
            _alternatives(getattr(rule, "trigger_pattern", None)),
            _alternatives(getattr(rule, "requires_pattern", None)),
            getattr(rule, "text_check", None),
        )
        trigger = shared.get(key)
        if trigger is None:
            trigger = shared[key] = Trigger(*key)
        table.append((code, trigger))
    return tuple(table)


def _alternatives(pattern: str | tuple[str, ...] | None) -> tuple[re.Pattern, ...] | None:
    if not pattern:
        return None
    return tuple(re.compile(p) for p in ((pattern,) if isinstance(pattern, str) else pattern))


def codes_that_may_fire(text: str, codes: frozenset[str]) -> frozenset[str] | None:
    """The enabled rules whose triggers occur in ``text``, plus the builtin codes (SYN001, SYN002);
    None when the prefilter cannot tell (a rule without triggers is enabled).

    Only these rules run on the file: a file that mentions ``.to(`` but no stream never builds the
    stream model."""
    table = _triggers_for(codes)
    if table is None:
        return None
    in_table = {code for code, _ in table}
    memo: dict = {}
    firing = {code for code, trigger in table if trigger.passes(text, memo)}
    return frozenset(firing | (codes - in_table))


def _syntax_checks(codes: frozenset[str]) -> dict[str, Check | None]:
    """Each rule's ``syntax_check`` on CPython's (about ten times cheaper) tree: SYN302 needs a bare
    ``x.to(...)``-like statement, so a file without one never reaches libcst for it."""
    from synclint.rules.registry import all_rules

    return {code: getattr(all_rules().get(code), "syntax_check", None) for code in codes}


@dataclass(frozen=True)
class _Plan:
    """What the engine should do with a file: nothing (``analysis`` is already the answer), or
    analyse ``text`` (the file ``source``, or its relevant slice) with ``codes``. ``tree`` is
    CPython's tree of the whole file and ``dropped`` the top-level statements the slice blanks
    (for the screen, :mod:`synclint.screen`), when known."""

    analysis: Analysis | None
    codes: frozenset[str]
    source: str
    tree: ast.Module | None = None
    dropped: frozenset[int] = frozenset()

    @cached_property
    def text(self) -> str:
        """What libcst parses: the file with the dropped definitions blanked out (made only when
        the ordinary run needs it: the screen works from ``tree`` and ``dropped``)."""
        return blank(self.source, self.tree, self.dropped) if self.dropped else self.source


def _plan(text: str, path: str, codes: frozenset[str]) -> _Plan:
    from synclint.engine import Analysis

    may_fire = codes_that_may_fire(text, codes)
    if may_fire is None:
        return _Plan(None, codes, text)
    table = dict(_triggers_for(codes))
    if not may_fire & table.keys() and compiles(text, path):
        return _Plan(Analysis([], parsed=True), may_fire, text)  # SYN001 was all it could be
    tree = python_parse(text, path)[0]  # every file is compiled once, for SYN001 if nothing else
    if tree is None:  # libcst parses it and reports SYN001 with its exact message
        return _Plan(None, may_fire, text)
    checks = _syntax_checks(may_fire)
    may_fire = frozenset(c for c in may_fire if checks[c] is None or checks[c](tree, text))
    firing = sorted(may_fire & table.keys())
    if not firing:
        return _Plan(Analysis([], parsed=True), may_fire, text, tree)
    triggers = list({(table[code], checks[code]): None for code in firing})
    return _Plan(None, may_fire, text, tree, irrelevant_definitions(text, tree, triggers))


def prefiltered(text: str, path: str, codes: frozenset[str]) -> Analysis | None:
    """An empty analysis when no enabled rule can fire and the file compiles; else None.

    Skipping the libcst parse is the single biggest saving on large trees (most files never touch
    streams). A file that does not compile is parsed with libcst anyway, so SYN001 keeps its exact
    message and position."""
    return _plan(text, path, codes).analysis


def lint_text(
    text: str,
    path: str,
    file_settings: FileSettings,
    prefilter: bool = True,
    screen: bool = True,
) -> FileResult:
    """Lint decoded text: the engine, then suppressions and SYN002.

    ``prefilter=False`` turns off every shortcut (trigger words, slicing, the screen), and
    ``screen=False`` the screen alone: both must give the same diagnostics."""
    codes = file_settings.codes
    plan = _plan(text, path, codes) if prefilter else _Plan(None, codes, text)
    analysis = plan.analysis
    run = plan.codes or codes
    # Suppression comments do not keep a file from the screen: a file it passes has no findings
    # at all, so no comment suppressed anything, which is exactly what SYN002 reports from.
    if analysis is None and screen and plan.tree is not None:
        from synclint.engine import Analysis
        from synclint.screen import may_report

        if not may_report(path, text, plan.tree, plan.dropped, run, file_settings.settings):
            analysis = Analysis([], parsed=True)
    if analysis is None:
        from synclint.engine import analyse

        sliced = plan.text if plan.dropped else None
        known = plan.tree is not None  # CPython parsed it: no need to ask again before libcst
        analysis = analyse(
            text, path, run, file_settings.settings, sliced=sliced, python_parsed=known
        )
        if sliced is not None and not analysis.parsed:  # the slice confused libcst: whole file
            analysis = analyse(text, path, run, file_settings.settings, python_parsed=known)
    result = FileResult(path=path, source=text)
    directives = parse_directives(text, findings=bool(analysis.diagnostics))
    for crash in analysis.crashes:
        result.errors.append(
            f"internal error: rule {crash.code} crashed on {path}: {crash.summary} "
            "(this is a synclint bug; please report it with the file)\n" + crash.traceback.rstrip()
        )
    known, _ = catalogue.codes()
    for line, code in unknown_codes(directives, known):
        result.warnings.append(
            f"{path}:{line}: unknown rule code `{code}` in a suppression comment"
        )
    kept = apply_suppressions(analysis.diagnostics, directives)
    if "SYN002" in codes and analysis.parsed:
        unused = unused_suppressions(path, directives, codes, known)
        file_level = [d for d in directives if d.kind == "ignore-file"]
        kept.extend(d for d in unused if not any(f.matches("SYN002") for f in file_level))
    result.diagnostics = sorted(kept, key=Diagnostic.sort_key)
    return result


def lint_bytes(data: bytes, path: str, file_settings: FileSettings) -> FileResult:
    decoded = decode(data, path)
    if decoded.text is None:
        found = [decoded.problem] if decoded.problem and "SYN001" in file_settings.codes else []
        return FileResult(path=path, diagnostics=found, source=None, encoding=decoded.encoding)
    result = lint_text(decoded.text, path, file_settings)
    result.encoding = decoded.encoding
    return result
