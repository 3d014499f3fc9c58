#!/usr/bin/env bash
# One prepared run for a CUDA machine (no GPU on dev/CI boxes):
#   1. the Triton kernels compiled (TRITON_INTERPRET unset) against the oracle, incl. the
#      guarded kernels and the tamper check: tests/kernels/triton_checks.py --device cuda
#   2. the decode benchmark with backend=triton, bf16 and fp32, full grid
#   3. the CPU-side kernel tests, if pytest is installed
# Results go to $OUT if set (else ./kvproof-out/gpu): triton_checks.txt, bench_triton_*.json,
# env.txt. Exit status is non-zero if the compiled checks fail.
#
#   PYTHON=/path/to/python benchmarks/gpu.sh          # default: .venv/bin/python or python3
set -uo pipefail

cd "$(dirname "$0")/.."
if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
DEST="${OUT:-./kvproof-out/gpu}"
mkdir -p "$DEST"
unset TRITON_INTERPRET  # compiled kernels: the interpreter must stay off

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || true
  "$PYTHON" -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'gpu', torch.cuda.is_available())"
} >"$DEST/env.txt" 2>&1
cat "$DEST/env.txt"

if ! "$PYTHON" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  echo "gpu.sh: torch sees no CUDA device; nothing to do" >&2
  exit 2
fi
if ! "$PYTHON" -c "import kvproof.kernels" 2>/dev/null; then
  # offline machine: no build isolation (it would fetch setuptools), no dependency resolution
  "$PYTHON" -m pip install -q --no-deps --no-build-isolation -e . >>"$DEST/env.txt" 2>&1 || {
    echo "gpu.sh: cannot import or install kvproof" >&2
    exit 2
  }
fi

status=0
echo "== compiled Triton checks"
timeout 600 "$PYTHON" tests/kernels/triton_checks.py --device cuda 2>&1 | tee "$DEST/triton_checks.txt"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1

for dtype in bfloat16 float32; do
  echo "== benchmark backend=triton dtype=$dtype"
  timeout 600 "$PYTHON" benchmarks/kernels.py --device cuda --backend triton --dtype "$dtype" \
    --max-kv-gb 40 >"$DEST/bench_triton_$dtype.json" || status=1
  "$PYTHON" -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))['summary'], indent=1))" \
    "$DEST/bench_triton_$dtype.json" || true
done

if "$PYTHON" -c "import pytest" 2>/dev/null; then
  echo "== CPU kernel tests"
  timeout 600 "$PYTHON" -m pytest -q tests/kernels 2>&1 | tail -5 | tee "$DEST/pytest_kernels.txt"
fi
exit $status
