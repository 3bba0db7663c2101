# shellcheck shell=bash
# Shared by the lab studies (tools/*-study): flags, the binary, the lab and its server, and
# cleanup. Sourced, not run. A study sets STUDY (its name) and LAB (default lab name)
# before sourcing, then calls study_args "$@", study_lab_up ..., study_serve, study_run ...
#
# Everything a study creates it removes on exit (trap): the server it started (by PID) and
# the lab (tools/lab down). Traffic stays inside the lab's namespaces (198.18.0.0/24).

set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
labtool="$here/tools/lab"
bin="${RINGPERF:-$here/target/release/ringperf}"
out="$here/target/studies/$STUDY"
quick=0
secs=5
iters="6,3"
conf="95,10"
server_pid=""

study_die() {
    echo "$STUDY: $*" >&2
    exit 2
}

study_usage() {
    cat >&2 <<USAGE
usage: tools/$STUDY [--quick] [--out DIR] [--lab NAME] [-l SECS] [-i MAX,MIN] [-I LEVEL,WIDTH]
  --quick       one 1 s run per point, no iterations (CI)
  --out DIR     where RESULTS.md, the JSON reports and the plots go (target/studies/$STUDY)
  --lab NAME    lab name for tools/lab ($LAB)
  -l SECS       seconds per run ($secs); -i/-I as in ringperf ($iters, $conf)
USAGE
    exit 2
}

study_args() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --quick) quick=1; shift ;;
            --out) [ $# -ge 2 ] || study_usage; out="$2"; shift 2 ;;
            --lab) [ $# -ge 2 ] || study_usage; LAB="$2"; shift 2 ;;
            -l) [ $# -ge 2 ] || study_usage; secs="$2"; shift 2 ;;
            -i) [ $# -ge 2 ] || study_usage; iters="$2"; shift 2 ;;
            -I) [ $# -ge 2 ] || study_usage; conf="$2"; shift 2 ;;
            -h | --help) study_usage ;;
            *) echo "$STUDY: unknown argument '$1'" >&2; study_usage ;;
        esac
    done
    [ "$(id -u)" = 0 ] || study_die "needs root for the lab's network namespaces: run it with sudo"
    [ -x "$bin" ] || study_die "$bin not found: run 'cargo build --release' first (or set RINGPERF)"
    command -v python3 >/dev/null || study_die "needs python3 to write the table from ringperf's JSON"
    if [ "$quick" = 1 ]; then
        secs=1
    fi
    mkdir -p "$out"
    trap study_cleanup EXIT
    trap 'exit 130' INT TERM
}

# The statistics flags of every run: -i/-I in a full study, nothing in --quick.
study_stats() {
    if [ "$quick" = 0 ]; then
        echo "-i $iters -I $conf"
    fi
}

study_cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
    "$labtool" --lab "$LAB" down >/dev/null 2>&1 || echo "$STUDY: 'tools/lab --lab $LAB down' failed: run it by hand" >&2
}

study_lab() { "$labtool" --lab "$LAB" "$@"; }

# Starts `ringperf serve` in host b and waits until it listens.
study_serve() {
    # Not through study_lab: a function in the background runs in a subshell, and $! would
    # be that subshell, not the server (tools/lab exec and ip netns exec both exec).
    "$labtool" --lab "$LAB" exec b "$bin" serve --bind 198.18.0.2 >"$out/server.log" 2>&1 &
    server_pid=$!
    local _
    for _ in $(seq 1 100); do
        if study_lab exec b ss -ltnH "sport = :12866" 2>/dev/null | grep -q .; then
            return 0
        fi
        kill -0 "$server_pid" 2>/dev/null || study_die "the server in host b exited: see $out/server.log"
        sleep 0.1
    done
    study_die "the server in host b did not listen within 10 s: see $out/server.log"
}

# study_run FILE WORKLOAD [flags]: one ringperf test from host a to host b, JSON to FILE.
# Every run takes the kernel cost profile (--profile), which the tables' per-category costs
# come from; a kernel that refuses it still gives the rest of the report.
study_run() {
    local file="$1"
    shift
    # shellcheck disable=SC2046 # study_stats is a list of flags
    study_lab exec a "$bin" "$@" -H 198.18.0.2 --cc cubic -l "$secs" $(study_stats) --profile --json >"$file"
}

# study_run_udp FILE WORKLOAD [flags]: the same for UDP, which has no congestion control.
study_run_udp() {
    local file="$1"
    shift
    # shellcheck disable=SC2046 # study_stats is a list of flags
    study_lab exec a "$bin" "$@" -H 198.18.0.2 -l "$secs" $(study_stats) --profile --json >"$file"
}
