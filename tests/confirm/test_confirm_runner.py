"""The subprocess runner: results, progress, scrubbed environment, process-group timeouts."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from synclint.confirm.runner import PROGRESS_PREFIX, run_child, scrubbed_environment

CHILD = """\
import json, os, subprocess, sys, time
job_path, result_path = sys.argv[1:]
job = json.load(open(job_path))
if job.get("spawn"):
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    open(job["pidfile"], "w").write(str(grandchild.pid))
    time.sleep(60)
print("user output")
print(%r + "trial 1 of 2", file=sys.stderr, flush=True)
env = {k: os.environ.get(k) for k in ("CUDA_LAUNCH_BLOCKING", "PYTORCH_CUDA_ALLOC_CONF", "KEEP_ME")}
json.dump({"status": "ok", "echo": job["value"], "env": env}, open(result_path, "w"))
""" % PROGRESS_PREFIX


def child(tmp_path: Path) -> list[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return [sys.executable, str(script)]


def test_result_progress_and_output_come_back(tmp_path) -> None:
    seen = []
    run = run_child(child(tmp_path), {"value": 42}, timeout=60, on_progress=seen.append)
    assert run.failure is None and run.result["echo"] == 42
    assert seen == ["trial 1 of 2"] and "user output" in run.output_tail
    assert PROGRESS_PREFIX not in run.output_tail


def test_serializing_settings_are_scrubbed(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")
    monkeypatch.setenv("KEEP_ME", "yes")
    run = run_child(child(tmp_path), {"value": 1}, timeout=60)
    assert run.result["env"] == {
        "CUDA_LAUNCH_BLOCKING": None, "PYTORCH_CUDA_ALLOC_CONF": None, "KEEP_ME": "yes",
    }


def test_scrubbed_environment_makes_synclint_importable() -> None:
    env = scrubbed_environment({"PATH": "/bin", "CUDA_LAUNCH_BLOCKING": "1"})
    root = str(Path(__file__).resolve().parents[2])
    assert "CUDA_LAUNCH_BLOCKING" not in env and root in env["PYTHONPATH"].split(os.pathsep)


def test_timeout_kills_the_whole_process_group(tmp_path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    started = time.monotonic()
    run = run_child(child(tmp_path), {"value": 0, "spawn": True, "pidfile": str(pidfile)}, timeout=3)
    assert run.timed_out and run.result is None and "timed out" in run.failure
    assert time.monotonic() - started < 30
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        # a killed child may linger as a zombie until reaped; check its state
        stat = Path(f"/proc/{grandchild}/stat")
        if stat.exists() and stat.read_text().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the grandchild survived the timeout")


def test_a_child_that_dies_without_a_result_is_explained(tmp_path) -> None:
    script = tmp_path / "dies.py"
    script.write_text("import sys\nprint('boom: no result')\nsys.exit(3)\n")
    run = run_child([sys.executable, str(script)], {}, timeout=30)
    assert run.result is None and "status 3" in run.failure and "boom" in run.failure
