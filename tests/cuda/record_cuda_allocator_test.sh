#!/usr/bin/env bash
# gcprof record leaves the job's CUDA allocator alone unless asked:
# PYTORCH_CUDA_ALLOC_CONF stays unset by default, `--cuda-allocator async`
# sets backend:cudaMallocAsync, and the job's own setting always wins.
# No GPU needed: the job only prints what it was given.
set -uo pipefail
gcprof=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
job=(sh -c 'echo "conf=[${PYTORCH_CUDA_ALLOC_CONF:-}]"')
conf() {  # record args... -> the job's line (PYTORCH_CUDA_ALLOC_CONF as in $JOB_CONF, unset when empty)
  if [ -n "${JOB_CONF:-}" ]; then
    PYTORCH_CUDA_ALLOC_CONF=$JOB_CONF "$gcprof" record -o "$tmp/t.db" "$@" -- "${job[@]}" 2>"$tmp/err" | grep '^conf='
  else
    env -u PYTORCH_CUDA_ALLOC_CONF "$gcprof" record -o "$tmp/t.db" "$@" -- "${job[@]}" 2>"$tmp/err" | grep '^conf='
  fi
}
fail() { echo "FAIL: $*"; cat "$tmp/err"; exit 1; }
got=$(conf --backend cuda)
[ "$got" = "conf=[]" ] || fail "default --backend cuda gave the job '$got', expected the job's allocator untouched (conf=[])"
got=$(conf --backend cuda --cuda-allocator async)
[ "$got" = "conf=[backend:cudaMallocAsync]" ] || fail "--cuda-allocator async gave '$got'"
got=$(JOB_CONF=expandable_segments:True conf --backend cuda --cuda-allocator async)
[ "$got" = "conf=[expandable_segments:True]" ] || fail "the job's own setting did not win: '$got'"
"$gcprof" record -o "$tmp/t.db" --cuda-allocator magic -- true >/dev/null 2>&1 \
  && fail "--cuda-allocator magic was accepted"
echo ok
