"""The experiment subprocess: ``python -m synclint.confirm.worker JOB.json RESULT.json``.

It imports torch (the lint path never does), checks for a CUDA device, runs one method of one finding
(or, for ``method: probe``, only describes the machine) and writes a JSON result. A failure of the
user's code is data for the verdict, not a crash: only a broken job makes this exit non-zero.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any


def environment(driver: bool = True) -> dict[str, Any]:
    """GPU, driver, CUDA and torch versions: recorded with every report (the driver only when
    asked: ``nvidia-smi`` costs half a second, and the probe already reported it)."""
    import torch

    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cuda_available": bool(torch.cuda.is_available()),
    }
    if info["cuda_available"]:
        info["gpu"] = torch.cuda.get_device_name(0)
        info["device_count"] = torch.cuda.device_count()
        capability = torch.cuda.get_device_capability(0)
        info["compute_capability"] = f"{capability[0]}.{capability[1]}"
    if not driver:
        return info
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        if smi.returncode == 0 and smi.stdout.strip():
            info["driver"] = smi.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    try:
        import torch  # noqa: F401
    except ImportError as error:
        return {"status": "no-torch", "error": f"PyTorch is not importable: {error}"}
    imported = time.monotonic()
    env = environment(driver=job["method"] == "probe")
    if job["method"] == "probe":
        return {"status": "ok" if env["cuda_available"] else "no-cuda", "environment": env}
    if not env["cuda_available"]:
        return {"status": "no-cuda", "environment": env}
    from synclint.confirm.experiments import METHOD_RUNNERS
    from synclint.confirm.targets import TargetError, TargetRunner

    ready = time.monotonic()
    cwd = job.get("cwd")
    if cwd:
        os.chdir(cwd)
    try:
        result = METHOD_RUNNERS[job["method"]](TargetRunner(job["target"]), job)
    except TargetError as error:
        result = {"status": "error", "method": job["method"], "error": str(error)}
    result["environment"] = env
    result["seconds"] = round(time.monotonic() - started, 3)
    result["timings"] = {  # where a finding's seconds go: importing torch, starting CUDA, the runs
        "import_torch": round(imported - started, 3),
        "cuda_init": round(ready - imported, 3),
        "method": round(time.monotonic() - ready, 3),
    }
    return result


def main(argv: list[str]) -> int:
    job_path, result_path = argv
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    try:
        result = run_job(job)
    except Exception as error:  # report it as this experiment's error instead of dying silently
        result = {
            "status": "error",
            "method": job.get("method"),
            "error": f"{type(error).__name__}: {error}",
            "traceback": traceback.format_exc()[-3000:],
        }
    Path(result_path).write_text(json.dumps(result, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # The result is on disk: skip interpreter teardown, which user threads or CUDA can hang.
    os._exit(status)
