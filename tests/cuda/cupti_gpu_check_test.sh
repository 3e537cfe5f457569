#!/usr/bin/env bash
# scripts/gpu-check where there is no GPU (CI, this machine): it must say so
# and exit 3 without building or running anything; bad knobs exit 2.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/scripts/gpu-check
[ -x "$script" ] || { echo "FAIL: $script missing or not executable"; exit 1; }
bash -n "$script" || { echo "FAIL: bash -n $script"; exit 1; }
if python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
  echo "a CUDA driver is installed: run scripts/gpu-check itself here"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
out=$(GPU_CHECK_OUT=$tmp "$script" 2>&1); rc=$?
echo "$out"
[ "$rc" -eq 3 ] || { echo "FAIL: exit $rc without a GPU, expected 3"; exit 1; }
grep -q "no usable NVIDIA GPU" <<<"$out" || { echo "FAIL: no 'no usable NVIDIA GPU' line"; exit 1; }
[ -z "$(ls -A "$tmp")" ] || { echo "FAIL: it wrote into $tmp although it checked nothing"; exit 1; }
GPU_CHECK_DEVICE=tpu "$script" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: GPU_CHECK_DEVICE=tpu exited $rc, expected 2"; exit 1; }
echo "ok"
