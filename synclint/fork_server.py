"""The fork server a cold command-line run forks its workers from, started as early as possible.

A worker needs libcst, the model and the rules: about 0.2 s of imports, paid once by a server
process that imports :data:`WORKER_MODULES` and then forks every worker. The server's imports run
on the other core while the command line is still importing its own modules, reading the
configuration and walking the tree, so the command line starts it first thing, before it imports
any of that (:func:`synclint.cli.check`); this module imports nothing else of synclint for that
reason. Library callers and tests that register rules at run time keep plainly forked workers
(``runner.run_jobs(..., preloaded=False)``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

#: What the fork server imports for its workers (:mod:`synclint.preload`).
WORKER_MODULES = ("synclint.preload",)


def context():
    """A multiprocessing context whose workers fork from one server process that imported
    :data:`WORKER_MODULES`; None where the platform has no fork server (Windows). What workers do
    not inherit is this process's state: only what a job carries reaches them, which is all the
    command line passes."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return None
    server = multiprocessing.get_context("forkserver")
    server.set_forkserver_preload([*WORKER_MODULES, "synclint.fork_server_exit"])
    return server


def workers_certain(paths: Iterable[str], cache_off: bool) -> bool:
    """Will a ``check`` run certainly lint in worker processes, whatever discovery finds? When
    there is no cache to answer from (``cache_off``: ``--no-cache``, or fixes, which never come
    from it) and a directory to walk (a directory of fewer Python files than
    ``runner.PARALLEL_THRESHOLD`` is rare: the server it starts idles then)."""
    return cache_off and any(os.path.isdir(p) for p in tuple(paths) or (".",) if p != "-")


def start() -> None:
    """Start the fork server now, in the background (it imports while this process goes on).
    Calling it again while it runs does nothing. Failing here only means workers start later or
    not at all (see ``runner.run_jobs``)."""
    try:
        if context() is not None:
            from multiprocessing import forkserver

            forkserver.ensure_running()
    except (OSError, RuntimeError, ImportError, ValueError):
        pass


def stop() -> None:
    """Stop the fork server this process started, if any, and wait for it to exit.

    Its workers are its children, not this process's: until it has been waited for, their time
    and memory count nowhere (``time``, ``wait4`` and benchmark tools would see only this
    process), and it would outlive the command for a moment. It exits as soon as it is told, its
    workers long gone. Starting the server also started multiprocessing's resource tracker (a
    process that would clean up shared memory the workers leaked; they make none), which exits
    only once every process holding its pipe has: it is stopped and waited for too, or it would
    outlive the command by a few milliseconds, in the command's process group. Uses the standard
    library's own way to stop both (``_stop``, private: where it is missing or fails, they exit
    by themselves when this process does)."""
    forkserver = sys.modules.get("multiprocessing.forkserver")
    if forkserver is None:
        return  # never imported, so never started (a warm run imports no multiprocessing)
    try:
        forkserver._forkserver._stop()  # noqa: SLF001 - see the docstring
    except (AttributeError, OSError, ValueError):
        return  # the server may still hold the tracker's pipe: waiting for the tracker could hang
    tracker = sys.modules.get("multiprocessing.resource_tracker")
    try:
        tracker._resource_tracker._stop()  # noqa: SLF001 - see the docstring
    except (AttributeError, OSError, ValueError, ChildProcessError):
        pass
