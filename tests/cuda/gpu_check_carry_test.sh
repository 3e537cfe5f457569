#!/usr/bin/env bash
# scripts/gpu_check/carry and scripts/gpu_check/configure: on a machine whose
# own SQLite, RE2, CLI11, nlohmann-json and pkg-config cannot be found (here:
# hidden from CMake and pkg-config), gpu-check's configure must fall back on
# the carried packages and find every one of them there; with the machine's
# own visible it must use those; with neither it must fail. Skipped (77)
# where apt-get cannot download (no registry) or python3 has no torch.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-carry.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$root/scripts/gpu_check/carry" "$tmp/carry" 2>&1); rc=$?
echo "$out" | tail -n 2
if [ "$rc" -ne 0 ]; then
  grep -q "apt-get download failed\|needs apt-get" <<<"$out" && { echo "SKIP: no package registry here"; exit 77; }
  fail "carry exited $rc"
fi
[ "$(wc -l <"$tmp/carry/packages.txt")" -eq 8 ] || fail "expected 8 packages: $(cat "$tmp/carry/packages.txt")"
# Relocatable: no .pc file names /usr, and the folder works once moved.
grep -l "=/usr" $(find "$tmp/carry" -name '*.pc') && fail "a .pc file still names /usr"
mv "$tmp/carry" "$tmp/moved"
flags=$(PKG_CONFIG_LIBDIR=/nonexistent "$tmp/moved/bin/pkg-config" --cflags --libs re2 sqlite3) \
  || fail "the carried pkg-config does not find re2 and sqlite3 once moved"
[[ "$flags" == *"$tmp/moved/"* ]] || fail "pkg-config's flags are not inside the carried folder: $flags"

torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null) \
  || { echo "SKIP: python3 has no torch"; exit 77; }
# What gpu-check passes, less CUDA (not every machine has the toolkit).
args=(-DCMAKE_BUILD_TYPE=Release -DGCPROF_BUILD_GUI=OFF -DGCPROF_BUILD_BENCH=OFF -DGCPROF_BUILD_TESTS=OFF)
hidden=(-DCMAKE_IGNORE_PREFIX_PATH="/usr;/;/usr/local")
configure() { "$root/scripts/gpu_check/configure" "$@"; }

used=$(PKG_CONFIG_LIBDIR=/nonexistent GPU_CHECK_CARRY=$tmp/moved \
       configure "$tmp/b1" "$tmp/b1.log" "$torch_prefix" "${args[@]}" "${hidden[@]}") \
  || fail "configure with the carried packages failed: $(grep -m2 -E 'Error|NOT' "$tmp/b1.log")"
[[ "$used" == "the carried packages in $tmp/moved" ]] || fail "it used: $used"
grep -q "Could NOT find" "$tmp/b1.log.own" || fail "the first try (machine's own) did not fail as staged"
for var in SQLite3_INCLUDE_DIR SQLite3_LIBRARY CLI11_DIR nlohmann_json_DIR pkgcfg_lib_RE2_re2; do
  grep -q "^$var:[A-Z]*=$tmp/moved/" "$tmp/b1/CMakeCache.txt" \
    || fail "$var not from the carried folder: $(grep "^$var:" "$tmp/b1/CMakeCache.txt")"
done

used=$(GPU_CHECK_CARRY=$tmp/moved configure "$tmp/b2" "$tmp/b2.log" "$torch_prefix" "${args[@]}") \
  || fail "configure with this machine's packages failed"
[ "$used" = "this machine's packages" ] || fail "with its own packages visible it used: $used"

PKG_CONFIG_LIBDIR=/nonexistent GPU_CHECK_CARRY=$tmp/none \
  configure "$tmp/b3" "$tmp/b3.log" "$torch_prefix" "${args[@]}" "${hidden[@]}" >/dev/null \
  && fail "configure passed with neither the machine's packages nor a carried folder"
echo ok
