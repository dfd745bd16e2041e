"""Run one experiment in a subprocess of its own.

Why a subprocess per experiment: PyTorch's CUDA sanitizer, the trace hook and the CUDA context are
process-wide, and the user's code may hang or crash the interpreter. The child runs in a new process
group so a timeout kills everything it started, and its environment is scrubbed of settings that
serialize streams and would hide every race (``CUDA_LAUNCH_BLOCKING`` and friends).

The child speaks JSON: it reads the job from a file and writes its result to another; lines it prints
to stderr that start with :data:`PROGRESS_PREFIX` are progress reports for the terminal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

PROGRESS_PREFIX = "@synclint-progress "

#: Environment variables that serialize CUDA work or change the allocator so races cannot show.
SCRUBBED = (
    "CUDA_LAUNCH_BLOCKING",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_CUDA_ALLOC_SYNC",
    "TORCH_CUDA_SANITIZER",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "TORCH_USE_CUDA_DSA",
    "PYTHONTRACEMALLOC",
)


def scrubbed_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: ours) without the serializing settings, with synclint importable."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in SCRUBBED}
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_root not in paths:
        paths.append(package_root)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@dataclass
class RunResult:
    """What came back from one child: its JSON result, or why there is none."""

    result: dict[str, Any] | None
    returncode: int | None
    timed_out: bool
    seconds: float
    output_tail: str = ""
    progress: list[str] = field(default_factory=list)

    @property
    def failure(self) -> str | None:
        """A sentence when the child produced no usable result."""
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s (the whole process group was killed)"
        if self.result is None:
            tail = self.output_tail.strip().splitlines()[-5:]
            detail = (": " + " | ".join(tail)) if tail else ""
            return f"the experiment process exited with status {self.returncode} and no result{detail}"
        return None


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_child(
    command: Sequence[str],
    job: Mapping[str, Any],
    timeout: float,
    on_progress: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    keep_output: int = 4000,
) -> RunResult:
    """Run ``command JOB.json RESULT.json`` with ``job``; kill its process group after ``timeout``."""
    with tempfile.TemporaryDirectory(prefix="synclint-confirm-") as scratch:
        job_path = Path(scratch) / "job.json"
        result_path = Path(scratch) / "result.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        started = time.monotonic()
        process = subprocess.Popen(
            [*command, str(job_path), str(result_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else scrubbed_environment(),
            cwd=cwd,
            start_new_session=True,  # its own process group: the timeout kills all of it
        )
        output: list[str] = []
        progress: list[str] = []

        def pump() -> None:
            assert process.stdout is not None
            for raw in process.stdout:
                text = raw.decode("utf-8", "replace")
                if text.startswith(PROGRESS_PREFIX):
                    message = text[len(PROGRESS_PREFIX) :].strip()
                    progress.append(message)
                    if on_progress is not None:
                        on_progress(message)
                else:
                    output.append(text)
                    while len(output) > 400:
                        output.pop(0)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        timed_out = False
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            process.wait()
        finally:
            _kill_group(process)  # whatever the child left behind in its group
        reader.join(timeout=5)
        seconds = time.monotonic() - started
        result = None
        if not timed_out and result_path.exists():
            try:
                result = json.loads(result_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                result = None
        return RunResult(
            result=result,
            returncode=process.returncode,
            timed_out=timed_out,
            seconds=seconds,
            output_tail="".join(output)[-keep_output:],
            progress=progress,
        )


def worker_command(python: str | None = None) -> list[str]:
    """How to start the experiment worker (with the same interpreter unless told otherwise)."""
    return [python or sys.executable, "-m", "synclint.confirm.worker"]
