"""Running the pipeline over many files: the cache, fixing, writing, and worker processes.

Each file is one :class:`Job`, handled by :func:`run_job` in this process or in a worker. Worker
processes pay off only with enough files (start-up costs a few hundred milliseconds), so small runs
stay serial. Results are sorted by path, so the output never depends on scheduling. A worker
that dies (a crash outside Python) costs only the file it was linting: see
:func:`_after_a_dead_worker`.
"""

from __future__ import annotations

import gc
import os
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from synclint.fork_server import context as fork_server  # a global here: tests turn it off
from synclint.pipeline import FileResult, FileSettings, decode, lint_bytes, lint_text

#: Fewer files than this are linted in this process.
PARALLEL_THRESHOLD = 32
MAX_WORKERS = 8


@dataclass(frozen=True)
class Job:
    path: str  # file system path, or "-" for standard input (then ``data`` is set)
    display: str  # the path shown in reports
    file_settings: FileSettings
    mode: str = "check"  # "check", "fix" (write) or "diff" (compute fixes, write nothing)
    unsafe: bool = False
    cache_dir: str | None = None
    data: bytes | None = None


def run_job(job: Job) -> FileResult:
    """Lint (and maybe fix) one file; never raises."""
    try:
        return _run_job(job)
    finally:
        if _collect_between_files and gc.get_count()[0] > GARBAGE_LIMIT:
            gc.collect()


def _run_job(job: Job) -> FileResult:
    try:
        data = job.data if job.data is not None else Path(job.path).read_bytes()
    except OSError as error:
        return FileResult(
            job.display, errors=[f"cannot read {job.display}: {error.strerror or error}"]
        )
    try:
        return _process(data, job)
    except Exception as error:  # noqa: BLE001 - one file's crash must not end the run
        return FileResult(
            job.display,
            errors=[
                f"internal error while linting {job.display}: {type(error).__name__}: {error} "
                "(this is a synclint bug; please report it with the file)\n"
                + traceback.format_exc().rstrip()
            ],
        )


def _process(data: bytes, job: Job) -> FileResult:
    cache = key = None
    if job.mode == "check" and job.cache_dir is not None:
        from synclint.cache import Cache

        cache = Cache(Path(job.cache_dir))
        key = cache.key(data, job.display, job.file_settings.cache_key())
        hit = cache.get(key, job.display)
        if hit is not None:
            diagnostics, warnings = hit
            source = decode(data, job.display).text if diagnostics else None
            return FileResult(job.display, diagnostics, source, warnings=warnings)
    result = lint_bytes(data, job.display, job.file_settings)
    if job.mode in ("fix", "diff") and result.source is not None and not result.errors:
        _fix(result, job)
    if cache is not None and key is not None and result.cacheable:
        cache.put(key, result.diagnostics, result.warnings)
    if job.mode == "check" and not result.diagnostics:
        result.source = None  # only code frames need it: do not ship every file's text back
    return result


def _fix(result: FileResult, job: Job) -> None:
    from synclint.fixer import fix_text, write_atomic

    def lint(text: str):
        return lint_text(text, job.display, job.file_settings).diagnostics

    original = result.source
    outcome = fix_text(original, lint, job.unsafe)
    if outcome.applied == 0 or outcome.text == original:
        return
    try:
        encoded = outcome.text.encode(result.encoding)
    except UnicodeEncodeError as error:
        result.errors.append(
            f"cannot write fixes to {job.display}: {error.reason} in {result.encoding}"
        )
        return
    if job.mode == "fix" and job.path != "-":
        try:
            write_atomic(Path(job.path), encoded)
        except OSError as error:
            result.errors.append(f"cannot write {job.display}: {error.strerror or error}")
            return
    result.original = original
    result.source = outcome.text
    result.fixed = outcome.applied
    result.diagnostics = outcome.diagnostics


def _cache_hit(job: Job) -> FileResult | None:
    """The cached result of a ``check`` job, looked up here: a hit needs no worker process."""
    if job.mode != "check" or job.cache_dir is None:
        return None
    try:
        data = job.data if job.data is not None else Path(job.path).read_bytes()
        from synclint.cache import Cache

        cache = Cache(Path(job.cache_dir))
        hit = cache.get(cache.key(data, job.display, job.file_settings.cache_key()), job.display)
        if hit is None:
            return None
        diagnostics, warnings = hit
        source = decode(data, job.display).text if diagnostics else None
        return FileResult(job.display, diagnostics, source, warnings=warnings)
    except Exception:  # noqa: BLE001 - a cache problem is a miss; run_job reports real errors
        return None


#: With the collector paused, collect between two files once this many objects (net) were
#: allocated since the last collection: the cyclic garbage a run can hold stays bounded.
GARBAGE_LIMIT = 100_000
_collect_between_files = False


def tune_gc(freeze: bool = True) -> None:
    """Collect cyclic garbage between files, not while one is being linted.

    Parsing builds hundreds of thousands of small container objects per file; an automatic
    collection while they are alive re-scans them all, for nothing (they are not garbage yet):
    with the default thresholds about a tenth to a fifth of a cold run. Nearly everything a file
    leaves is freed by reference counting (libcst trees and ``ast`` trees hold no cycles; the
    model breaks its own, :meth:`Interpreter.close`), so the collector is paused and
    :func:`run_job` collects after a file when the objects allocated since the last collection
    pass :data:`GARBAGE_LIMIT`, at a point where few are alive. ``freeze`` also moves what imports
    allocated out of the collector's sight. Worker processes call this once at start; a serial
    run uses :func:`_gc_tuned`, which puts everything back."""
    global _collect_between_files
    if freeze:
        gc.freeze()
    gc.disable()
    _collect_between_files = True


@contextmanager
def _gc_tuned():
    """:func:`tune_gc` for the duration of a serial run in this process (which may be a test
    session or an editor integration: leave its collector as it was)."""
    global _collect_between_files
    was_enabled = gc.isenabled()
    # `gc.unfreeze()` thaws everything, also what the host process froze itself: freeze only when
    # nothing was frozen before, so that putting things back is exact.
    freeze = gc.get_freeze_count() == 0
    tune_gc(freeze)
    try:
        yield
    finally:
        _collect_between_files = False
        if was_enabled:
            gc.enable()
        if freeze:
            gc.unfreeze()


def _size(job: Job) -> int:
    if job.data is not None:
        return len(job.data)
    try:
        return os.path.getsize(job.path)
    except OSError:
        return 0


def run_jobs(
    jobs: list[Job], parallel: bool = True, preloaded: bool = False
) -> list[FileResult]:
    """Run every job; results in path order.

    Cache hits are answered in this process first, so a warm run over an unchanged tree starts no
    workers; the misses go to the pool largest first in small chunks, so that one big file does not
    finish last on one worker while the other idles. ``preloaded``: fork the workers from the
    :func:`fork_server` (the command line), not from this process."""
    results: list[FileResult] = []
    pending: list[Job] = []
    for job in jobs:
        hit = _cache_hit(job)
        if hit is not None:
            results.append(hit)
        else:
            pending.append(job)
    done: list[FileResult] | None = None
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if parallel and len(pending) >= PARALLEL_THRESHOLD and workers > 1:
        # Imported here: a warm run answers every file from the cache and starts no workers.
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        pending.sort(key=_size, reverse=True)
        done = []
        try:
            context = fork_server() if preloaded else None
            with ProcessPoolExecutor(workers, context, initializer=tune_gc) as pool:
                chunk = max(1, min(8, len(pending) // (workers * 16)))
                for result in pool.map(run_job, pending, chunksize=chunk):
                    done.append(result)  # in order: what is done when a worker dies is known
        except BrokenProcessPool:
            done.extend(_after_a_dead_worker(pending[len(done) :]))
        except (OSError, RuntimeError, ImportError):
            done = None  # no worker processes here (sandbox, frozen app): go serial
    if done is None:
        with _gc_tuned():
            done = [run_job(job) for job in pending]
    results.extend(done)
    return sorted(results, key=lambda r: r.path)


def _after_a_dead_worker(remaining: list[Job]) -> list[FileResult]:
    """Lint what was left when a worker process died (a crash in native code, such as a parser
    overflowing its stack, or the system killing it), without dying the same way here.

    The jobs run again in one worker at a time, in order, so that when a worker dies again the
    file it was linting is the first one not done: that file gets an error (exit status 2) and
    the others are linted. Never in this process: whatever killed the worker would kill the run."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    done: list[FileResult] = []
    while remaining:
        before = len(done)
        try:
            with ProcessPoolExecutor(max_workers=1, initializer=tune_gc) as pool:
                for result in pool.map(run_job, remaining):
                    done.append(result)  # noqa: PERF402 - one by one: what finished is known
            return done
        except BrokenProcessPool:
            finished = len(done) - before
            culprit = remaining[finished]
            message = (
                f"internal error: the process linting {culprit.display} died (a crash "
                "outside Python, or killed by the system); the file was not linted "
                "(this is a synclint bug; please report it with the file)"
            )
            done.append(FileResult(culprit.display, errors=[message]))
            remaining = remaining[finished + 1 :]
    return done
