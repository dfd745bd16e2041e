"""Worker processes of a command-line run: forked from a server that imported everything once."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
from frame_helpers import write

ROOT = Path(__file__).resolve().parent.parent

needs_fork_server = pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server here"
)

LINT_EVERYTHING = """
import sys
from pathlib import Path
from synclint.fork_server import WORKER_MODULES
for name in WORKER_MODULES:
    __import__(name)
before = set(sys.modules)
from synclint.pipeline import FileSettings
from synclint.rules.registry import all_rules
from synclint.runner import Job, run_job
every_rule = FileSettings(frozenset(all_rules()))
files = sorted(Path(sys.argv[1]).rglob("*.py"))
for mode in ("check", "diff"):
    for path in files:
        result = run_job(Job(str(path), path.name, every_rule, mode, cache_dir=sys.argv[2]))
        assert not result.errors, result.errors
heavy = ("synclint", "libcst")
print(sorted(m for m in set(sys.modules) - before if m.startswith(heavy)))
"""


def test_the_fork_server_imports_all_that_linting_imports(tmp_path):
    """A worker forked from the server imports nothing more, whatever it lints (every fixture,
    every rule, checked with a cache and fixed): else each worker pays that import again."""
    run = subprocess.run(
        [sys.executable, "-c", LINT_EVERYTHING, str(ROOT / "fixtures"), str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "[]"


@pytest.fixture
def started(monkeypatch):
    """Record whether the command line started the fork server, and how it ran its jobs."""
    import synclint.check_command as check_command
    import synclint.fork_server

    calls: list = []
    real_run_jobs = check_command.run_jobs
    monkeypatch.setattr(synclint.fork_server, "start", lambda: calls.append("server"))

    def run_jobs(jobs, parallel=True, preloaded=False):
        calls.append(("preloaded", preloaded))
        return real_run_jobs(jobs, parallel=False)

    monkeypatch.setattr(check_command, "run_jobs", run_jobs)
    return calls


def test_the_server_starts_first_only_when_workers_are_certain(project, cli, started):
    for index in range(3):
        write(project / "src" / f"m{index}.py", "x = 1\n")
    cli("check", "--no-cache", "src")  # no cache, a directory: workers whatever is found
    # Started by the command line and asked again by `run_check` (for library callers): the
    # second call finds it running.
    assert started == ["server", "server", ("preloaded", True)]
    started.clear()
    cli("check", "--fix", ".")  # fixes never come from the cache
    assert started == ["server", "server", ("preloaded", True)]
    started.clear()
    cli("check", "src")  # a warm run may need no worker at all
    cli("check", "--no-cache", "src/m0.py", "src/m1.py")  # a few files, named
    assert "server" not in started


def test_the_command_line_starts_the_server_before_importing_the_check(tmp_path):
    """The server's 0.2 s of imports overlap the command's own: it is started before the command
    imports its configuration, discovery and pipeline modules (about 30 ms)."""
    write(tmp_path / "src" / "m.py", "x = 1\n")
    probe = (
        "import sys\n"
        "import synclint.fork_server as server\n"
        "from synclint.cli import run\n"
        "seen = []\n"
        "server.start = lambda: seen.append('synclint.check_command' in sys.modules)\n"
        "status = run(sys.argv[1:])\n"
        "print('IMPORTED AT EACH START', seen)\n"
        "sys.exit(status)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe, "check", "--no-cache", "src"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "IMPORTED AT EACH START [False, True]" in run.stdout


@needs_fork_server
def test_a_cold_run_lints_in_workers_forked_from_the_server_and_waits_for_it(tmp_path):
    example = ROOT / "examples" / "prefetcher.py"  # the README's example: one SYN101
    for index in range(40):  # past PARALLEL_THRESHOLD
        write(tmp_path / f"m{index:02d}.py", example.read_text(encoding="utf-8"))
    probe = (
        "import resource, sys\n"
        "from multiprocessing import forkserver\n"
        "import synclint.fork_server as command\n"
        "from synclint.cli import run\n"
        "real_stop = command.stop\n"
        "def stop():\n"
        "    print('SERVER', forkserver._forkserver._forkserver_pid is not None, file=sys.stderr)\n"
        "    real_stop()\n"
        "command.stop = stop\n"
        "status = run(sys.argv[1:])\n"
        "print('STOPPED', forkserver._forkserver._forkserver_pid is None, file=sys.stderr)\n"
        "children = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print('WAITED', children.ru_maxrss > 0, file=sys.stderr)\n"
        "print('HOOKED', 'synclint.fork_server_exit' in sys.modules, file=sys.stderr)\n"
        "import os\n"
        "try:\n"
        "    os.waitpid(-1, os.WNOHANG)\n"
        "    print('CHILDREN LEFT', file=sys.stderr)\n"
        "except ChildProcessError:\n"
        "    print('NO CHILD LEFT', file=sys.stderr)\n"
        "sys.exit(status)\n"
    )
    args = ["check", "--no-cache", "--output-format", "json", "--select", "SYN101", "."]
    run = subprocess.run(
        [sys.executable, "-c", probe, *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=300,
        check=False,
    )
    assert run.returncode == 1, run.stderr[-2000:]
    assert "SERVER True" in run.stderr
    # Stopped and waited for before the command returns: the workers' time and memory count as
    # the command's (a benchmark reading `wait4` sees them), and no server outlives it.
    assert "STOPPED True" in run.stderr and "WAITED True" in run.stderr
    # The server's quick exit (`os._exit` at exit) is the server's alone: here it would cut
    # this process's output short.
    assert "HOOKED False" in run.stderr
    # Nor does multiprocessing's resource tracker, which the server started: it would be left
    # running for a moment in the command's process group (a pre-commit hook's, a benchmark's).
    assert "NO CHILD LEFT" in run.stderr
    findings = json.loads(run.stdout)
    per_file = {finding["filename"] for finding in findings}
    assert len(per_file) == 40 and len(findings) % 40 == 0


def test_the_fork_servers_quick_exit_does_nothing_outside_the_server():
    """Imported by anything but the fork server (a documentation tool importing every module), the
    quick-exit module registers nothing: output is flushed and the exit status kept."""
    run = subprocess.run(
        [sys.executable, "-c", "import sys, synclint.fork_server_exit; print('flushed'); sys.exit(3)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (run.returncode, run.stdout) == (3, "flushed\n"), run.stderr
