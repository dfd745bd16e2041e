#!/bin/bash
# synclint confirm on the GPU machine: the cuda-marked tests and the twin benchmark.
# Run from the repository root with the wheels in .whl/ (libcst, pyyaml); results go to $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
OUT=${OUT:-/tmp/synclint-confirm-out}
mkdir -p "$OUT"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
} 2>&1 | tee "$OUT/machine.txt"
TRIALS=${TRIALS:-5}
time python3 benchmarks/confirm_twins.py "$OUT/twins" --trials "$TRIALS" 2>&1 | tee "$OUT/twins.log"
cp "$OUT/twins/summary.md" "$OUT/summary.md" 2>/dev/null
tar czf "$OUT/twins.tgz" -C "$OUT" twins && rm -rf "$OUT/twins"
python3 -m pytest tests/confirm -q -p no:cacheprovider -m cuda -x 2>&1 | tee "$OUT/pytest_cuda.log" | tail -30
python3 -m pytest tests/confirm -q -p no:cacheprovider 2>&1 | tail -3
