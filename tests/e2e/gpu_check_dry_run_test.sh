#!/usr/bin/env bash
# scripts/gpu-check --dry-run on this CPU machine, against the build under
# test: every step of the runbook runs small (plain, torch.profiler and
# recorded runs of three jobs, advise at three budgets, verify, the report)
# and it exits 0 with one report that lists the GPU checks as skipped.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
GPU_CHECK_BUILD=$build GPU_CHECK_WORK=$tmp/work GPU_CHECK_OUT=$tmp/out OMP_NUM_THREADS=1 \
  "$root/scripts/gpu-check" --dry-run >"$tmp/log" 2>&1; rc=$?
cat "$tmp/log"
[ "$rc" -eq 0 ] || { echo "FAIL: gpu-check --dry-run exited $rc"; exit 1; }
report=$tmp/out/gpu-check-report.md
[ -s "$report" ] || { echo "FAIL: no $report"; exit 1; }
[ -s "$tmp/out/gpu-check-report.json" ] || { echo "FAIL: no JSON report"; exit 1; }
grep -q "^result: PASS" "$report" || { echo "FAIL: report has no 'result: PASS'"; exit 1; }
for job in gpt gpt2 resnet; do
  grep -q "^## $job" "$report" || { echo "FAIL: no section for $job"; exit 1; }
  grep -q "pass: $job: advised" "$report" || { echo "FAIL: $job was not advised"; exit 1; }
  grep -q "pass: $job: step times measured" "$report" || { echo "FAIL: $job: no step times"; exit 1; }
done
grep -q "skipped: gpt: allocated peak" "$report" || { echo "FAIL: GPU checks not listed as skipped"; exit 1; }
grep -q "verify" "$report" || { echo "FAIL: no verification in the report"; exit 1; }
echo ok
