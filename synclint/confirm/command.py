"""``synclint confirm``: prove static findings on a CUDA device.

This module is imported by the CLI on every run, so it must not import torch: torch is imported only
by the worker subprocess (:mod:`synclint.confirm.worker`). ``confirm`` executes the user's code, so it
runs only when asked for, says up front what it will execute, and is never part of ``check``.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Sequence

import click

from synclint.confirm.plan import (
    METHODS,
    EntryError,
    Plan,
    Target,
    describe_targets,
    parse_entry,
    plan_findings,
)
from synclint.confirm.report import RENDERERS, FindingsError, read_findings
from synclint.confirm.runner import RunResult, run_child, worker_command
from synclint.confirm.verdict import Confirmation, MethodOutcome, decide, exit_code, merge_results
from synclint.diagnostics import Diagnostic

SKIPPED_DIRS = {".git", ".hg", ".venv", "venv", "env", "__pycache__", "node_modules", "build", "dist"}


def python_files(paths: Iterable[str]) -> list[str]:
    found: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = sorted(
                    d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith(".")
                )
                found.extend(str(Path(dirpath) / f) for f in sorted(filenames) if f.endswith(".py"))
        elif path.exists():
            found.append(str(path))
        else:
            raise click.UsageError(f"no such file or directory: {raw}")
    return found


def lint_files(files: Sequence[str], codes: frozenset[str]) -> list[Diagnostic]:
    """Lint with the CLI's pipeline (so suppression comments count) or, without it, the engine."""
    found: list[Diagnostic] = []
    try:
        from synclint.pipeline import FileSettings, lint_bytes
    except ImportError:  # pragma: no cover - the pipeline ships with synclint
        FileSettings = lint_bytes = None  # type: ignore[assignment]
    from synclint.engine import lint_source

    for name in files:
        data = Path(name).read_bytes()
        try:
            if lint_bytes is not None:
                found.extend(lint_bytes(data, name, FileSettings(codes)).diagnostics)
                continue
        except TypeError:  # the pipeline's interface moved on: the engine still works
            pass
        found.extend(lint_source(data.decode("utf-8", "replace"), name, codes))
    return found


def selected_codes(select: str | None) -> frozenset[str]:
    """The confirmable codes to lint for (all of them unless ``--select`` narrows it)."""
    confirmable = frozenset(METHODS)
    if not select:
        return confirmable
    wanted = {c.strip().upper() for c in select.split(",") if c.strip()}
    return frozenset(c for c in confirmable if any(c.startswith(w) or w == "ALL" for w in wanted))


class Progress:
    """``finding i of n … trial j of k`` on a terminal (one rewritten line); silent otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.prefix = ""

    def show(self, message: str) -> None:
        if self.enabled:
            click.echo(f"\r\033[K{self.prefix}{message}", nl=False, err=True, color=True)

    def done(self) -> None:
        if self.enabled:
            click.echo("\r\033[K", nl=False, err=True, color=True)


def probe(python: str | None, timeout: float) -> dict:
    """The device description, or a UsageError-like exit when there is no torch or no CUDA."""
    outcome = run_child(worker_command(python), {"method": "probe"}, timeout=timeout)
    result = outcome.result or {}
    if result.get("status") == "no-torch" or (
        outcome.result is None and "No module named 'torch'" in outcome.output_tail
    ):
        raise click.ClickException(
            "synclint confirm needs PyTorch with CUDA in the interpreter that runs the experiments "
            "(install `synclint[confirm]`, or pass --python PATH)"
        )
    if outcome.failure:
        raise click.ClickException(f"could not inspect the device: {outcome.failure}")
    if result.get("status") == "no-cuda":
        env = result.get("environment", {})
        raise click.ClickException(
            f"no CUDA device: torch {env.get('torch', '?')} (CUDA {env.get('cuda_runtime')}) sees "
            "no GPU here, and confirming a finding means running it on one"
        )
    return dict(result.get("environment") or {})


def confirm_plan(
    plan: Plan,
    *,
    trials: int,
    timeout: float,
    sleep_cycles: int,
    python: str | None,
    progress: Progress,
) -> Confirmation:
    outcomes: list[MethodOutcome] = []
    if plan.executable:
        # Each method is its own subprocess; running them side by side keeps one finding near the
        # cost of its slowest method (mostly importing torch and starting CUDA).
        def run(method: str, trial: int = 0, trials: int = trials) -> RunResult:
            spec = plan.spec(method, trials, sleep_cycles, seed=1000 + 100 * trial)
            spec["cwd"] = os.getcwd()
            return run_child(
                worker_command(python),
                spec,
                timeout=timeout,
                on_progress=lambda message: progress.show(f"{method}: {message}"),
            )

        def run_method(method: str) -> MethodOutcome:
            if not plan.fresh_process_per_trial:
                child = run(method)
                return MethodOutcome(method, child.result, child.failure, child.seconds)
            with ThreadPoolExecutor(max_workers=min(trials, 4)) as pool:
                children = list(pool.map(lambda k: run(method, k, 1), range(trials)))
            failures = [c.failure for c in children if c.failure]
            merged = merge_results([c.result for c in children])
            failure = failures[0] if merged is None and failures else None
            return MethodOutcome(method, merged, failure, max(c.seconds for c in children))

        with ThreadPoolExecutor(max_workers=max(1, len(plan.methods))) as pool:
            outcomes = list(pool.map(run_method, plan.methods))
    return decide(plan, outcomes)


class ConfirmFailure(click.ClickException):
    exit_code = 2


@click.command("confirm")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--entry", help='Run this instead: "python train.py ARGS", "pytest ARGS" or pkg.mod:fn.')
@click.option("--findings", "findings_file", type=click.Path(dir_okay=False),
              help="Confirm the findings of an earlier `synclint --output-format json` run.")
@click.option("--select", help="Only these codes or prefixes (comma-separated).")
@click.option("--trials", type=click.IntRange(1, 1000), default=5, show_default=True,
              help="Trials per method and finding.")
@click.option("--timeout", type=click.FloatRange(1.0), default=120.0, show_default=True,
              help="Seconds per experiment; the whole process group is killed after it.")
@click.option("--sleep-cycles", type=click.IntRange(1000), default=200_000_000, show_default=True,
              help="GPU cycles the held-back stream spins before the flagged line's work.")
@click.option("--output-format", type=click.Choice(sorted(RENDERERS)), default="text", show_default=True)
@click.option("--output-file", type=click.Path(dir_okay=False), help="Write the report here.")
@click.option("--python", "python", help="Interpreter (with torch) that runs the experiments.")
@click.option("--dry-run", is_flag=True, help="Show what would run and how; execute nothing.")
def confirm(
    paths: tuple[str, ...],
    entry: str | None,
    findings_file: str | None,
    select: str | None,
    trials: int,
    timeout: float,
    sleep_cycles: int,
    output_format: str,
    output_file: str | None,
    python: str | None,
    dry_run: bool,
) -> None:
    """Run the code behind each finding on CUDA, with the race window widened, and report whether
    the hazard really happens. Executes your code: only run it on code you trust."""
    try:
        target: Target | None = parse_entry(entry) if entry else None
    except EntryError as error:
        raise ConfirmFailure(str(error)) from None
    codes = selected_codes(select)
    if findings_file:
        try:
            diagnostics = [d for d in read_findings(findings_file) if d.code in codes]
        except FindingsError as error:
            raise ConfirmFailure(str(error)) from None
        if paths:
            keep = {os.path.realpath(f) for f in python_files(paths)}
            diagnostics = [d for d in diagnostics if os.path.realpath(d.path) in keep]
    elif paths:
        diagnostics = [d for d in lint_files(python_files(paths), codes) if d.code in codes]
    else:
        raise click.UsageError("give PATHS to lint or --findings REPORT.json")
    plans = plan_findings(diagnostics, target)
    click.echo(_notice(plans, dry_run), err=True, nl=False)
    if dry_run:
        return
    environment: dict = {}
    if any(p.executable for p in plans):
        try:
            environment = probe(python, timeout)
        except click.ClickException as error:
            raise ConfirmFailure(error.message) from None
    progress = Progress(sys.stderr.isatty())
    pairs: list[tuple[Diagnostic, Confirmation]] = []
    for number, plan in enumerate(plans, start=1):
        d = plan.diagnostic
        progress.prefix = f"finding {number} of {len(plans)} ({d.code} {Path(d.path).name}:{d.span.start.line}) "
        pairs.append((d, confirm_plan(plan, trials=trials, timeout=timeout,
                                      sleep_cycles=sleep_cycles, python=python, progress=progress)))
    progress.done()
    text = RENDERERS[output_format](pairs, environment, trials, Path.cwd())
    if output_file:
        Path(output_file).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    sys.exit(exit_code([c for _, c in pairs]))


def _notice(plans: Sequence[Plan], dry_run: bool) -> str:
    runnable = [p for p in plans if p.executable]
    if not plans:
        return "No confirmable findings.\n"
    lines = [f"{len(plans)} finding(s), {len(runnable)} executable."]
    targets = describe_targets(plans)
    if targets:
        verb = "would execute" if dry_run else "will execute"
        lines.append(f"synclint confirm {verb} (your code, each experiment in a subprocess):")
        lines += [f"  - {t}" for t in targets]
    if dry_run:
        for plan in plans:
            d = plan.diagnostic
            head = f"  {d.path}:{d.span.start.line} {d.code}"
            if plan.executable:
                delay = ", ".join(str(r[0]) for r in plan.delay) or "none"
                lines.append(f"{head}: {' + '.join(plan.methods)}; delay before line(s) {delay}")
            else:
                lines.append(f"{head}: not executable: {plan.reason}")
    return "\n".join(lines) + "\n"
