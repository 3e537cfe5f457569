#!/usr/bin/env bash
# The scale benchmark (bench/RESULTS.md, "Scale: 10M-allocation traces"):
# makes a trace of N allocations with scale_make_trace (once; kept) and
# times show, advise, export and the GUI's screenshot on it under
# /usr/bin/time, printing wall time and peak resident memory of each.
#   bench/scale/measure.sh [BUILD] [ALLOCATIONS] [DIR]
# e.g. bench/scale/measure.sh build 10000000 /tmp/scale (the trace is ~0.5 GB:
# keep it out of the repository).
set -euo pipefail
build=${1:-build}
n=${2:-1000000}
dir=${3:-/tmp/gcprof-scale}
mkdir -p "$dir"
trace=$dir/scale-$n.db
if [ ! -s "$trace" ]; then
  "$build/bin/scale_make_trace" "$trace" --allocations "$n"
fi
echo "trace: $trace ($(du -h "$trace" | cut -f1)); load: $(uptime | sed 's/.*load average: //')"
measure() {
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$dir/time.txt" "$@" >"$dir/$label.out" 2>"$dir/$label.err" || {
    echo "$label: failed (exit $?), see $dir/$label.err"
    return 0
  }
  read -r wall kb <"$dir/time.txt"
  printf '%-10s %8.1f s %8.0f MB\n' "$label" "$wall" "$((kb / 1024))"
}
measure show "$build/bin/gcprof" show "$trace"
measure advise "$build/bin/gcprof" advise "$trace" --budget 60% --no-store
measure export "$build/bin/gcprof" export "$trace" --format chrome-trace -o "$dir/trace.json"
if [ -x "$build/bin/gcprof-gui" ]; then
  # Headless: under xvfb-run (its own memory is small beside the GUI's).
  xvfb=()
  [ -n "${DISPLAY:-}" ] || xvfb=(xvfb-run -a)
  measure gui "${xvfb[@]}" "$build/bin/gcprof-gui" "$trace" --screenshot "$dir/gui.png" --size 1600x900
fi
