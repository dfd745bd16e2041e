"""What a rule is, and the context it runs in.

A rule is a small class in its own module under ``synclint/rules/``: metadata (code, name, default,
fix kind, trigger words) and a ``check`` method that queries the stream timeline model
(:mod:`synclint.model`) through a :class:`RuleContext` and yields diagnostics. Modules in this package
are discovered automatically (:mod:`synclint.rules.registry`), so adding a rule is adding one file
(plus its page in ``rules/`` and its fixtures in ``fixtures/``).
"""

from __future__ import annotations

import ast
import enum
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Iterator, Mapping

import libcst as cst

from synclint.diagnostics import Applicability, Diagnostic, Edit, Fix, Related, Span

if TYPE_CHECKING:  # pragma: no cover
    from synclint.model import ModuleModel
    from synclint.settings import AnalysisSettings


class FixKind(str, enum.Enum):
    """What the catalogue promises about a rule's fix (shown by ``synclint rules``)."""

    NONE = "none"
    SAFE = "safe"
    UNSAFE = "unsafe"
    SOMETIMES = "sometimes"  # safe where the intent is unambiguous (SYN501)


class Rule:
    """Base class of every rule. Subclasses set the class variables and implement ``check``."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    default_enabled: ClassVar[bool] = True
    fix_kind: ClassVar[FixKind] = FixKind.NONE
    #: Substrings of which a file must contain at least one for this rule to possibly fire. The text
    #: prefilter skips parsing files that contain no rule's trigger; keep these honest (a differential
    #: test checks that the prefilter never changes results).
    triggers: ClassVar[tuple[str, ...]] = ()
    #: Optional regular expression a file must *also* match for this rule to possibly fire, for
    #: rules whose trigger words are too common as substrings (``to``, ``time``). It must be a
    #: necessary condition too: allow every spelling Python allows (spaces, line continuations,
    #: comments between ``.`` and a name). Files are checked per rule, and only the rules that may
    #: fire are run on a file.
    #: A tuple of patterns means any of them: each is searched on its own, so start each with a
    #: literal (``stream(?<!\wstream)`` rather than ``\bstream``): Python's ``re`` then skips
    #: straight to candidates, ten to fifty times faster on large files.
    trigger_pattern: ClassVar[str | tuple[str, ...] | None] = None
    #: Optional ``check(tree: ast.Module, text: str) -> bool`` on CPython's (much faster) syntax tree
    #: and the text it was parsed from (of the file, or of one definition when slicing: then after
    #: blank lines, so that the text's line numbers are still the tree's), run when
    #: the triggers matched: False means the rule cannot fire on this file, so it is not run (and
    #: libcst is not needed if no other rule may fire). Also a necessary condition, never a guess.
    syntax_check: ClassVar[Callable[[ast.Module, str], bool] | None] = None
    #: Optional ``check(text: str) -> bool`` on the text alone, asked after the trigger words and
    #: patterns and before the text is parsed: False when ``syntax_check`` would certainly say
    #: False too, so a file no other rule needs is not parsed at all (only compiled, for SYN001).
    #: For rules whose trigger words are everywhere but whose sites have a shape a short scan of
    #: the text can rule out (SYN302: a bare ``x.to(...)`` statement, :mod:`synclint.textscan`).
    #: A necessary condition, like the others.
    text_check: ClassVar[Callable[[str], bool] | None] = None
    #: Optional regular expression for what the rule needs in the very definition it reports on,
    #: beyond its triggers: SYN204 judges only events created in the same function, so ``Event``
    #: must occur there. A file must match it too. When slicing (:mod:`synclint.slicing`), a
    #: definition is relevant to the rule only if it matches both; a module-level statement that
    #: matches either (``from torch.cuda import Event as E``) makes the names it binds relevant, so
    #: a definition using them is kept. A necessary condition, like the others.
    requires_pattern: ClassVar[str | tuple[str, ...] | None] = None
    #: Rules implemented by the lint pipeline itself (SYN001, SYN002) rather than by ``check``.
    builtin: ClassVar[bool] = False

    def check(self, ctx: "RuleContext") -> Iterable[Diagnostic]:  # pragma: no cover - interface
        return ()


class RuleContext:
    """Everything a rule may ask about one file. Expensive parts are computed on first use."""

    def __init__(
        self,
        path: str,
        source: str,
        module: cst.Module,
        settings: "AnalysisSettings",
        parsed: str | None = None,
    ) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.settings = settings
        #: The text libcst parsed when it is not ``source``: the file with the definitions no rule
        #: can report on blanked out (same lines and columns).
        self.parsed = parsed

    @cached_property
    def model(self) -> "ModuleModel":
        from synclint.model import build_module_model

        return build_module_model(self.module, self.settings, self.source, self.code_for)

    @cached_property
    def positions(self):
        from synclint.positions import PositionIndex

        # The texts: no codegen of the module to find where its statements are.
        return PositionIndex(self.module, self.source, self.parsed)

    # -- helpers for rules ---------------------------------------------------------------------

    def span(self, node: cst.CSTNode) -> Span:
        return self.positions.span(node)

    def line(self, node: cst.CSTNode) -> int:
        return self.positions.span(node).start.line

    def statement_lines(self, node: cst.CSTNode) -> tuple[int, int]:
        """First and last line of the simple or compound-statement header that contains ``node``."""
        return self.positions.statement_lines(node)

    def code_for(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def diagnostic(
        self,
        rule: type[Rule] | Rule,
        node: cst.CSTNode,
        message: str,
        related: Iterable[tuple[cst.CSTNode, str]] = (),
        fix: Fix | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> Diagnostic:
        first, last = self.statement_lines(node)
        return Diagnostic(
            code=rule.code,
            message=message,
            path=self.path,
            span=self.span(node),
            related=tuple(Related(self.span(n), m) for n, m in related),
            fix=fix,
            data=dict(data or {}),
            noqa_line=first,
            noqa_end_line=last,
        )

    def insert_before_statement(
        self, node: cst.CSTNode, text: str, message: str, applicability: Applicability
    ) -> Fix:
        """A fix that inserts ``text`` as a new line before the statement holding ``node``,
        with the statement's indentation."""
        return self.positions.insert_before_statement(node, text, message, applicability)

    def replace(self, node: cst.CSTNode, text: str, message: str, applicability: Applicability) -> Fix:
        return Fix(message, applicability, (Edit(self.span(node), text),))


def iter_rule_classes() -> Iterator[type[Rule]]:
    from synclint.rules.registry import all_rules

    yield from all_rules().values()
