"""Which findings can be proven at run time, and how.

A static finding names lines; an experiment needs more: what to execute (a :class:`Target`), which line
runs "first" and which "second", where to hold a stream back so the unsynchronized side overtakes it,
and how to tell that the race happened (the *method*). This module answers those questions from the
``Diagnostic`` alone (code, lines, ``related``, ``data``) plus a plain ``ast`` look at the file, so it
runs without torch and is tested on CPU.

Methods (each runs in its own subprocess, see :mod:`synclint.confirm.experiments`):

``sanitizer``  PyTorch's CUDA sanitizer, its report matched to the finding's two lines (SYN101/103).
``delay``      sleep on the stream that must go first, compare with a synchronized reference run.
``lifetime``   ``delay`` plus proof that the freed block was handed out again while still in use (SYN102).
``host-read``  snapshot host tensors at the flagged read and again after a synchronization (SYN301).
``host-wait``  after the flagged wait: is the event still pending, did host buffers change (SYN201).
``exception``  the exception PyTorch raises at the flagged line (SYN202, SYN203, SYN502).
"""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from synclint.diagnostics import Diagnostic

LineRange = tuple[int, int]

#: Exception text that proves the timing misuse (SYN202/203) or capture failure (SYN502).
EXCEPTION_PATTERNS = {
    "SYN202": r"enable_timing|timing",
    "SYN203": r"not ready|not completed|not been recorded|must be recorded|elapsed",
    "SYN502": r"captur|graph",
}

#: How each confirmable rule is proven, in the order the methods run.
METHODS: dict[str, tuple[str, ...]] = {
    "SYN101": ("sanitizer", "delay"),
    "SYN103": ("sanitizer", "delay"),
    "SYN102": ("lifetime",),
    "SYN304": ("delay",),
    "SYN301": ("host-read",),
    "SYN201": ("host-wait",),
    "SYN202": ("exception",),
    "SYN203": ("exception",),
    "SYN502": ("exception",),
}

#: Rules whose hazard, once it happens, leaves the process's CUDA context unusable (a failed graph
#: capture): each trial of theirs runs in a fresh process.
FRESH_PROCESS_PER_TRIAL = frozenset({"SYN502"})

#: Why the other rules are not confirmed at run time.
NOT_CONFIRMABLE = {
    "SYN001": "a syntax error is not a run-time behaviour",
    "SYN002": "an unused suppression is not a run-time behaviour",
    "SYN104": "a no-op wait has no effect of its own to observe; the race it leaves is SYN101's",
    "SYN105": "stream aliasing from per-iteration streams is a performance hazard with no wrong value",
    "SYN204": "a wait on an unrecorded event does nothing; the race it leaves is SYN101's",
    "SYN205": "a host-timer reading is a measurement, not a value that can be proven wrong",
    "SYN206": "timing events on the wrong stream give a plausible number, not a wrong value",
    "SYN302": "a discarded transfer result is visible statically; nothing races",
    "SYN303": "a copy from pageable memory is correct, only not overlapped",
    "SYN501": "API misuse is reported statically; run it to see PyTorch's own error",
}


@dataclass(frozen=True)
class Target:
    """What an experiment executes.

    ``kind``: ``module`` (the file's code, run as ``run_name``), ``function`` (the module, then
    ``function()``), ``script`` (``python file.py args``), ``run-module`` (``python -m mod args``),
    ``pytest`` (``pytest args`` in-process) or ``callable`` (``pkg.module:function``).
    """

    kind: str
    description: str
    path: str | None = None
    function: str | None = None
    run_name: str = "__synclint_confirm__"
    argv: tuple[str, ...] = ()
    module: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "description": self.description,
            "path": self.path,
            "function": self.function,
            "run_name": self.run_name,
            "argv": list(self.argv),
            "module": self.module,
        }


@dataclass(frozen=True)
class Plan:
    """How one finding is confirmed, or why it cannot be."""

    diagnostic: Diagnostic
    reason: str = ""  # non-empty: not executable / not confirmable, and why
    target: Target | None = None
    methods: tuple[str, ...] = ()
    second: LineRange = (0, 0)  # the flagged line(s)
    first: LineRange | None = None  # the earlier access, where there is one
    delay: tuple[LineRange, ...] = ()  # hold a stream back just before these lines run
    delay_stream: str | None = None  # expression naming that stream; None: the current stream
    sync_after: tuple[LineRange, ...] = ()  # the reference run synchronizes after these
    tensor: str | None = None
    exception_pattern: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def executable(self) -> bool:
        return not self.reason and self.target is not None

    @property
    def fresh_process_per_trial(self) -> bool:
        return self.diagnostic.code in FRESH_PROCESS_PER_TRIAL

    def spec(self, method: str, trials: int, sleep_cycles: int, seed: int = 1000) -> dict[str, Any]:
        """The JSON job handed to the worker subprocess for one method."""
        assert self.target is not None
        return {
            "method": method,
            "code": self.diagnostic.code,
            "target": self.target.to_json(),
            "file": str(Path(self.diagnostic.path).resolve()),
            "second": list(self.second),
            "first": list(self.first) if self.first else None,
            "delay": [list(r) for r in self.delay],
            "delay_stream": self.delay_stream,
            "sync_after": [list(r) for r in self.sync_after],
            "tensor": self.tensor,
            "exception_pattern": self.exception_pattern,
            "trials": trials,
            "sleep_cycles": sleep_cycles,
            "seed": seed,
        }


# -- entry points ------------------------------------------------------------------------------


class EntryError(ValueError):
    """An ``--entry`` string synclint cannot run."""


def parse_entry(entry: str) -> Target:
    """``python train.py --steps 2``, ``python -m pkg.train``, ``pytest tests/x.py`` or ``pkg.mod:fn``."""
    try:
        words = shlex.split(entry)
    except ValueError as error:
        raise EntryError(f"cannot split --entry {entry!r}: {error}") from None
    if not words:
        raise EntryError("--entry is empty")
    head = Path(words[0]).name
    if head.startswith("python"):
        rest = words[1:]
        if rest[:1] == ["-m"] and len(rest) >= 2:
            return Target("run-module", entry, module=rest[1], argv=tuple(rest[1:]))
        if not rest or rest[0].startswith("-"):
            raise EntryError(f"--entry {entry!r}: expected `python SCRIPT [ARGS]` or `python -m MODULE`")
        return Target("script", entry, path=str(Path(rest[0]).resolve()), argv=tuple(rest))
    if head in ("pytest", "py.test"):
        return Target("pytest", entry, argv=tuple(words[1:]))
    if len(words) == 1 and ":" in words[0]:
        module, _, function = words[0].partition(":")
        if module and function.isidentifier():
            return Target("callable", f"{module}:{function}()", module=module, function=function)
    raise EntryError(
        f"--entry {entry!r}: expected `python SCRIPT [ARGS]`, `python -m MODULE [ARGS]`, "
        "`pytest [ARGS]` or `package.module:function`"
    )


# -- what the file looks like around a line ------------------------------------------------------


class _Scopes(ast.NodeVisitor):
    """Every function definition with its parent, to find the innermost one around a line."""

    def __init__(self) -> None:
        self.functions: list[tuple[ast.AST, ast.AST | None]] = []
        self.main_guards: list[ast.If] = []
        self._stack: list[ast.AST] = []

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.functions.append((node, self._stack[-1] if self._stack else None))
        if isinstance(node, ast.If) and _is_main_guard(node.test) and not self._stack:
            self.main_guards.append(node)
        scoped = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if scoped:
            self._stack.append(node)
        super().generic_visit(node)
        if scoped:
            self._stack.pop()


def _is_main_guard(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _contains(node: ast.AST, line: int) -> bool:
    return node.lineno <= line <= (node.end_lineno or node.lineno)


@dataclass(frozen=True)
class SourceFacts:
    """What the planner needs to know about one file."""

    tree: ast.Module

    @classmethod
    def read(cls, path: str) -> "SourceFacts | str":
        """The parsed file, or a sentence saying why it cannot be read."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            return f"cannot read {path}: {error.strerror or error}"
        except UnicodeDecodeError:
            return f"cannot read {path}: not UTF-8"
        try:
            return cls(ast.parse(text, filename=path))
        except SyntaxError as error:
            return f"cannot parse {path}: {error.msg} (line {error.lineno})"

    def _scopes(self) -> _Scopes:
        scopes = _Scopes()
        scopes.visit(self.tree)
        return scopes

    def enclosing_function(self, line: int) -> tuple[ast.AST | None, ast.AST | None]:
        """The innermost function around ``line`` and that function's parent (None: module level)."""
        best: tuple[ast.AST | None, ast.AST | None] = (None, None)
        for function, parent in self._scopes().functions:
            if _contains(function, line):
                if best[0] is None or function.lineno >= best[0].lineno:
                    best = (function, parent)
        return best

    def in_main_guard(self, line: int) -> bool:
        return any(_contains(guard, line) for guard in self._scopes().main_guards)

    def calls_before(self, line: int, scope: ast.AST | None, kind: str) -> list[LineRange]:
        """Lines before ``line`` in the same scope holding calls of ``kind``: ``copy`` (any call with
        ``non_blocking=True``) or ``record`` (``.record(...)`` / ``.record_event(...)``)."""
        root = scope if scope is not None else self.tree
        found: set[LineRange] = set()
        for node in ast.walk(root):
            if not isinstance(node, ast.Call) or node.lineno >= line:
                continue
            if kind == "copy" and any(
                k.arg == "non_blocking" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in node.keywords
            ):
                found.add((node.lineno, node.end_lineno or node.lineno))
            if (
                kind == "record"
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("record", "record_event")
            ):
                found.add((node.lineno, node.end_lineno or node.lineno))
        return sorted(found)


def _takes_no_arguments(function: ast.AST) -> bool:
    args = function.args  # type: ignore[attr-defined]
    positional = args.posonlyargs + args.args
    if len(positional) - len(args.defaults) > 0:
        return False
    return all(default is not None for default in args.kw_defaults)


def own_target(path: str, facts: SourceFacts, line: int) -> Target | str:
    """What to run to reach ``line`` without a user entry point, or why nothing can be."""
    function, parent = facts.enclosing_function(line)
    name = Path(path).name
    if function is None:
        main = facts.in_main_guard(line)
        return Target(
            "module",
            f"module-level code of {name}" + (" (as __main__)" if main else ""),
            path=str(Path(path).resolve()),
            run_name="__main__" if main else "__synclint_confirm__",
        )
    fname = function.name  # type: ignore[attr-defined]
    hint = "; pass --entry to run it from your own entry point"
    if isinstance(function, ast.AsyncFunctionDef):
        return f"`{fname}` is a coroutine function{hint}"
    if parent is not None:
        what = "a method" if isinstance(parent, ast.ClassDef) else "a nested function"
        return f"`{fname}` is {what}, which synclint cannot call on its own{hint}"
    if not _takes_no_arguments(function):
        return f"`{fname}()` needs arguments{hint}"
    return Target(
        "function", f"{fname}() in {name}", path=str(Path(path).resolve()), function=fname
    )


# -- the plan for one finding --------------------------------------------------------------------


def _lines(span_start: int, span_end: int) -> LineRange:
    return (span_start, max(span_start, span_end))


def _primary(diagnostic: Diagnostic) -> LineRange:
    first = diagnostic.noqa_line or diagnostic.span.start.line
    last = max(diagnostic.noqa_end_line or 0, diagnostic.span.end.line, first)
    return (min(first, diagnostic.span.start.line), last)


def _access(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


def _stream_name(access: Mapping[str, Any]) -> str | None:
    stream = access.get("stream")
    return stream if isinstance(stream, str) and stream else None


def _related_lines(diagnostic: Diagnostic) -> list[LineRange]:
    return [
        _lines(r.span.start.line, r.span.end.line)
        for r in diagnostic.related
        if r.path in (None, diagnostic.path)
    ]


def _first_access(diagnostic: Diagnostic) -> LineRange | None:
    first = _access(diagnostic.data, "first")
    if isinstance(first.get("line"), int):
        line = first["line"]
        return (line, line)
    related = _related_lines(diagnostic)
    return related[0] if related else None


def plan_finding(diagnostic: Diagnostic, entry: Target | None = None) -> Plan:
    """Decide how ``diagnostic`` is confirmed (see the module docstring for the methods)."""
    code = diagnostic.code
    if code not in METHODS:
        reason = NOT_CONFIRMABLE.get(code, f"{code} has no run-time confirmation")
        return Plan(diagnostic, reason=f"not confirmable: {reason}")
    if any(r.path not in (None, diagnostic.path) for r in diagnostic.related) and code in (
        "SYN101",
        "SYN103",
    ):
        return Plan(diagnostic, reason="the two accesses are in different files")
    facts = SourceFacts.read(diagnostic.path)
    if isinstance(facts, str):
        return Plan(diagnostic, reason=facts)
    second = _primary(diagnostic)
    target = entry if entry is not None else own_target(diagnostic.path, facts, second[0])
    if isinstance(target, str):
        return Plan(diagnostic, reason=target)
    scope, _ = facts.enclosing_function(second[0])
    data = diagnostic.data or {}
    tensor = data.get("tensor") if isinstance(data.get("tensor"), str) else None
    methods = METHODS[code]
    if code in ("SYN101", "SYN103"):
        first = _first_access(diagnostic)
        if first is None:
            return Plan(diagnostic, reason="the finding does not say where the first access is")
        return Plan(
            diagnostic,
            target=target,
            methods=methods,
            second=second,
            first=first,
            delay=(first,),
            delay_stream=_stream_name(_access(data, "first")),
            sync_after=(first, second),
            tensor=tensor,
        )
    if code == "SYN102":
        # The use on the other stream must finish before the block is reused: hold it back.
        use = _access(data, "use") or _access(data, "second")
        return Plan(
            diagnostic,
            target=target,
            methods=methods,
            second=second,
            delay=(second,),
            delay_stream=_stream_name(use),
            sync_after=(second,),
            tensor=tensor,
        )
    if code == "SYN304":
        copies = _related_lines(diagnostic) or facts.calls_before(second[0], scope, "copy")
        if not copies:
            return Plan(diagnostic, reason="cannot tell which copy reads the buffer")
        return Plan(
            diagnostic,
            target=target,
            methods=methods,
            second=second,
            first=copies[-1],
            delay=tuple(copies),
            sync_after=(*copies, second),
        )
    if code in ("SYN301", "SYN201", "SYN203"):
        kinds = {"SYN301": ("copy",), "SYN201": ("copy", "record"), "SYN203": ("record",)}[code]
        delays = set(_related_lines(diagnostic))
        for kind in kinds:
            delays.update(facts.calls_before(second[0], scope, kind))
        delays.discard(second)
        return Plan(
            diagnostic,
            target=target,
            methods=methods,
            second=second,
            delay=tuple(sorted(delays)),
            tensor=tensor,
            exception_pattern=EXCEPTION_PATTERNS.get(code),
        )
    return Plan(  # SYN202, SYN502: the exception is deterministic, nothing to widen
        diagnostic,
        target=target,
        methods=methods,
        second=second,
        exception_pattern=EXCEPTION_PATTERNS.get(code),
    )


def plan_findings(
    diagnostics: Iterable[Diagnostic], entry: Target | None = None
) -> list[Plan]:
    return [plan_finding(d, entry) for d in diagnostics]


def describe_targets(plans: Sequence[Plan]) -> list[str]:
    """The distinct things ``confirm`` is about to execute, for the up-front notice."""
    seen: dict[str, None] = {}
    for plan in plans:
        if plan.executable and plan.target is not None:
            seen.setdefault(plan.target.description, None)
    return list(seen)
