"""``synclint check``: configuration, discovery, the run, and the report.

Kept apart from :mod:`synclint.cli` so that ``synclint --version`` and ``synclint rules`` never
import the analysis, and so that the whole flow can be read top to bottom in :func:`run_check`.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from synclint.config import ConfigError
from synclint.discovery import Discoverer, PathError, below
from synclint.fixer import split_lines
from synclint.output import Report, render, summary, use_color
from synclint.pipeline import FileResult
from synclint.project import Overrides, Project
from synclint import fork_server
from synclint.runner import Job, run_job, run_jobs

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class CheckOptions:
    paths: tuple[str, ...] = ()
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    output_format: str = "full"
    statistics: bool = False
    exit_zero: bool = False
    no_cache: bool = False
    force_exclude: bool = False
    config: Path | None = None
    stdin_filename: str | None = None
    quiet: bool = False

    @property
    def mode(self) -> str:
        return "diff" if self.diff else "fix" if self.fix else "check"


def display_path(path: Path, cwd: Path) -> str:
    """``path`` as reports show it: relative to ``cwd`` when below it (POSIX form), else as is."""
    shown = str(path)
    rel = below(shown, str(cwd))
    return shown if rel is None else rel


def _jobs(options: CheckOptions, project: Project, warn: Callable[[str], None]) -> list[Job]:
    cache_dir = None if options.no_cache or options.mode != "check" else str(project.cache_dir())
    if "-" in options.paths:
        if len(options.paths) > 1:
            raise ConfigError("`-` (standard input) cannot be combined with other paths")
        name = options.stdin_filename
        at = Path(os.path.abspath(name)) if name else project.cwd / "-"
        settings = project.file_settings(at)
        display = display_path(at, project.cwd) if name else "-"
        data = sys.stdin.buffer.read()
        return [Job("-", display, settings, options.mode, options.unsafe_fixes, None, data)]
    discoverer = Discoverer(project.exclude_rules, options.force_exclude, warn)
    paths = [Path(p) for p in (options.paths or (".",))]
    jobs = []
    for path in discoverer.files(paths):
        display = display_path(path, project.cwd)
        jobs.append(
            Job(
                str(path),
                display,
                project.file_settings(path),
                options.mode,
                options.unsafe_fixes,
                cache_dir,
            )
        )
    return jobs


def _unified_diff(result: FileResult) -> str:
    before = split_lines(result.original or "", keepends=True)
    after = split_lines(result.source or "", keepends=True)
    lines = difflib.unified_diff(before, after, f"a/{result.path}", f"b/{result.path}")
    return "".join(
        line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
        for line in lines
    )


def _statistics(diagnostics) -> str:
    from synclint.diagnostics import Applicability
    from synclint.rules.registry import all_rules

    counts = Counter(d.code for d in diagnostics)
    safe = {
        d.code
        for d in diagnostics
        if d.fix is not None and d.fix.applicability is Applicability.SAFE
    }
    rules = all_rules()
    width = len(str(max(counts.values(), default=0)))
    return "\n".join(
        f"{count:>{width}}\t{code}\t{'[*]' if code in safe else '[ ]'} "
        f"{rules[code].name if code in rules else ''}"
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )


def _write_source(result: FileResult, original: bytes) -> None:
    """Standard input's source on standard output: the input bytes unless fixes changed them."""
    data = original
    if result.original is not None and result.source is not None:
        data = result.source.encode(result.encoding)
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:
        sys.stdout.write(data.decode("utf-8", "replace"))
    else:
        sys.stdout.flush()
        stream.write(data)
    sys.stdout.flush()


def _lint(options: CheckOptions, warn, fail) -> tuple[Project, list[Job], list]:
    """Read the configuration, find the files and lint them: the project, the jobs and their
    results."""
    try:
        project = Project(
            Overrides(options.select, options.extend_select, options.ignore, options.config)
        )
        jobs = _jobs(options, project, warn)
    except (ConfigError, PathError) as error:
        raise fail(str(error)) from None
    if not jobs and not options.quiet:
        warn("no Python files found under the given paths")
    try:
        if len(jobs) > 1:
            return project, jobs, run_jobs(jobs, preloaded=True)
        return project, jobs, [run_job(job) for job in jobs]
    except ConfigError as error:
        raise fail(str(error)) from None


def run_check(options: CheckOptions, out, err, fail) -> int:
    warn = (lambda message: None) if options.quiet else (lambda message: err(f"warning: {message}"))
    if fork_server.workers_certain(options.paths, options.no_cache or options.mode != "check"):
        fork_server.start()  # the command line started it already; a library caller has not
    try:
        project, jobs, results = _lint(options, warn, fail)
    finally:
        fork_server.stop()
    errors = [message for result in results for message in result.errors]
    for result in results:
        for message in result.warnings:
            warn(message)
    for message in errors:
        err(f"error: {message}")
    diagnostics = sorted((d for r in results for d in r.diagnostics), key=lambda d: d.sort_key())
    status = EXIT_ERROR if errors else EXIT_CLEAN

    if options.diff:
        diffs = [_unified_diff(r) for r in results if r.original is not None]
        if diffs:
            out("".join(diffs).rstrip("\n"))
        if not options.quiet:
            fixed = sum(r.fixed for r in results)
            err(
                f"Would fix {fixed} error{'s' if fixed != 1 else ''}."
                if fixed
                else "No errors would be fixed."
            )
        return status or (EXIT_FINDINGS if diffs else EXIT_CLEAN)

    stdin_fix = options.fix and jobs and jobs[0].path == "-"
    if stdin_fix:
        out_stream = err  # the (fixed) source goes to standard output, byte for byte
        _write_source(results[0], jobs[0].data or b"")
    else:
        out_stream = out
    report = Report(
        diagnostics=diagnostics,
        sources={r.path: r.source for r in results if r.source is not None and r.diagnostics},
        root=project.cwd,
        fixed=sum(r.fixed for r in results),
        unsafe_fixes=options.unsafe_fixes,
        color=use_color(sys.stderr if stdin_fix else sys.stdout),
        show_summary=not options.quiet,
        fix_mode=options.fix,
        unchecked=sum(1 for r in results if r.errors),
    )
    if options.statistics:
        text = _statistics(diagnostics)
        if not options.quiet:
            text = (text + "\n" if text else "") + summary(report)
        if text:
            out_stream(text)
    else:
        text = render(options.output_format, report)
        if options.output_format == "concise" and not options.quiet:
            text = (text + "\n" if text else "") + summary(report)
        if text:
            out_stream(text)
    if status:
        return status
    if diagnostics and not options.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN
