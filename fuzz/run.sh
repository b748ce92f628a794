#!/usr/bin/env bash
# Builds the libFuzzer binaries of fuzz/ on the stable toolchain and runs them.
#
#   fuzz/run.sh run SECONDS [TARGET...]   every target (or those named) SECONDS seconds each,
#                                         one at a time; new inputs go to fuzz/corpus-work/<target>
#   fuzz/run.sh merge [TARGET...]         minimizes the kept corpus and corpus-work into
#                                         fuzz/corpus/<target>: at most KEEP_FILES (300) inputs
#                                         and KEEP_BYTES (600000) bytes that cover the most edges
#   fuzz/run.sh build                     only builds
#
# Prints the executions of each target from libFuzzer's final stats, and exits 1 when a target
# found a crash, a hang (-timeout=10) or ran out of memory (its input is in fuzz/artifacts/).
set -euo pipefail

cd "$(dirname "$0")"
ALL_TARGETS=(read summary render diff bench)
HOST=$(rustc -vV | sed -n 's/^host: //p')
BIN="target/$HOST/release"
LIMITS=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=131072)

ensure_cxx() {
    # libfuzzer-sys compiles libFuzzer's C++ sources with the cc crate.
    command -v c++ >/dev/null 2>&1 && return 0
    command -v apt-get >/dev/null 2>&1 || { echo "no C++ compiler and no apt-get: install g++" >&2; exit 2; }
    local sudo=""
    [ "$(id -u)" != 0 ] && sudo="sudo"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends g++ ||
        { $sudo apt-get update -q && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends g++; }
}

build() {
    ensure_cxx
    # The flags cargo-fuzz passes, spelled out: SanitizerCoverage's module pass with inline 8-bit
    # edge counters, the PC table and comparison tracing are stable codegen options. --target
    # keeps them off build scripts and proc macros, which are not linked with libFuzzer.
    RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=3 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing" \
        cargo build --release --locked --target "$HOST" --bins
}

stat() {
    sed -n "s/^stat::$1: *//p" "$2" | tail -n 1
}

run() {
    local seconds=$1
    shift
    local targets=("$@")
    [ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")
    build
    mkdir -p logs
    local failed=()
    printf '%-8s %12s %8s %8s %9s  %s\n' target executions seconds exec/s corpus result
    for target in "${targets[@]}"; do
        mkdir -p "corpus-work/$target" "artifacts/$target"
        local log="logs/$target.log" status=0 result=ok
        "$BIN/$target" "${LIMITS[@]}" -print_final_stats=1 -max_total_time="$seconds" \
            -artifact_prefix="artifacts/$target/" "corpus-work/$target" "corpus/$target" \
            >"$log" 2>&1 || status=$?
        if [ "$status" != 0 ]; then
            result="FAILED (exit $status): see fuzz/$log and fuzz/artifacts/$target/"
            failed+=("$target")
        fi
        local executions corpus
        executions=$(stat number_of_executed_units "$log")
        corpus=$(find "corpus-work/$target" -type f | wc -l)
        printf '%-8s %12s %8s %8s %9s  %s\n' "$target" "${executions:-0}" "$seconds" \
            "$(stat average_exec_per_sec "$log")" "$corpus" "$result"
    done
    if [ ${#failed[@]} -gt 0 ]; then
        echo "targets that failed: ${failed[*]}" >&2
        exit 1
    fi
}

merge() {
    local targets=("$@")
    [ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")
    build
    for target in "${targets[@]}"; do
        local merged="corpus-merged/$target" kept="corpus-kept/$target"
        local control="logs/$target-merge.control"
        rm -rf "$merged" "$kept" "$control"
        mkdir -p "$merged" "corpus/$target" "corpus-work/$target"
        # Every input of the kept corpus and of the campaigns (corpus-work/<target>*), with its
        # whole set of edges (set-cover merge, edges only), then a greedy cover within budget.
        "$BIN/$target" "${LIMITS[@]}" -set_cover_merge=1 -merge_control_file="$control" \
            -use_cmp=0 -use_counters=0 "$merged" "corpus/$target" corpus-work/"$target"* \
            >"logs/$target-merge.log" 2>&1
        python3 keep.py "$control" "$kept" "${KEEP_FILES:-300}" "${KEEP_BYTES:-600000}"
        rm -rf "corpus/$target" "$merged"
        mv "$kept" "corpus/$target"
    done
}

case "${1:-}" in
    build) build ;;
    run) shift; run "${1:-60}" "${@:2}" ;;
    merge) shift; mkdir -p logs; merge "$@" ;;
    *) echo "usage: fuzz/run.sh build | run SECONDS [TARGET...] | merge [TARGET...]" >&2; exit 2 ;;
esac
