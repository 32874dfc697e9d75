#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What sbxd's memory does when a command writes its output a byte at a time.
#
#   bench/sbxd-output-memory.sh [--bytes N] [--spin N] SBXD [SBXD...]
#
# For each sbxd given (to compare two builds in one run, alternately), on a
# loopback port and a state directory of its own: one sandbox, a static
# helper uploaded into it that write()s N bytes one at a time (a busy loop of
# --spin iterations between writes, so that sandbox's init forwards them one
# by one), run twice: all to stdout, then alternating stdout and stderr (no
# two neighbours of one stream). Printed per run: the wall time of the
# command (the helper's loop is most of it), the log lines a reader gets, and
# sbxd's resident memory before and after, read from /proc. Needs cc (a static
# libc: Debian's libc6-dev has it), curl and python3; as root, the way sbxd
# runs its isolation layers (sbxd --check).
set -euo pipefail

bytes=200000 spin=20000
while [ $# -gt 0 ]; do
  case "$1" in
    --bytes) bytes=$2; shift 2 ;;
    --spin) spin=$2; shift 2 ;;
    -h|--help) sed -n '5p' "$0" | sed 's/^# *//'; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { sed -n '5p' "$0" | sed 's/^# *//' >&2; exit 2; }

tmp=$(mktemp -d /tmp/sbxd-output-XXXXXX)
chmod 711 "$tmp" # sandboxes run under host ids of their own, which pass through it
pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
cat >"$tmp/drip.c" <<'EOF'
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    long n = atol(argv[1]);
    int spin = atoi(argv[2]), alternate = argc > 3;
    for (long i = 0; i < n; i++) {
        if (write(alternate && (i & 1) ? 2 : 1, "a", 1) != 1)
            return 1;
        for (volatile int k = 0; k < spin; k++)
            ;
    }
    return 0;
}
EOF
cc -O2 -static -o "$tmp/drip" "$tmp/drip.c"
tar -C "$tmp" -cf "$tmp/drip.tar" drip

rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
port=17930
printf '%-40s %-12s %8s %10s %18s\n' "sbxd" "writes" "wall s" "log lines" "sbxd RSS kB"
for sbxd in "$@"; do
  port=$((port + 1))
  state="$tmp/state-$port"
  "$sbxd" --listen "127.0.0.1:$port" --state-dir "$state" >"$tmp/out-$port" 2>"$tmp/log-$port" &
  pid=$!; pids+=("$pid")
  for _ in $(seq 100); do grep -q listening "$tmp/out-$port" 2>/dev/null && break; sleep 0.1; done
  [ -f "$state/token" ] || { echo "$sbxd did not start:"; tail -5 "$tmp/log-$port"; exit 1; } >&2
  url="http://127.0.0.1:$port/v1/sandboxes" auth="Authorization: Bearer $(cat "$state/token")"
  sid=$(curl -sf -H "$auth" -H 'Content-Type: application/json' -d '{"projectId":"bench","timeout":600000}' "$url" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["sandbox"]["id"])')
  curl -sf -H "$auth" --data-binary "@$tmp/drip.tar" "$url/$sid/fs/write" >/dev/null
  before=$(rss "$pid")
  for mode in one alternating; do
    args="\"$bytes\",\"$spin\""
    [ "$mode" = alternating ] && args="$args,\"alt\""
    t0=$(date +%s.%N)
    cid=$(curl -sf -H "$auth" -H 'Content-Type: application/json' \
            -d "{\"command\":\"./drip\",\"args\":[$args],\"wait\":true}" "$url/$sid/cmd" | tail -1 |
          python3 -c 'import json, sys; c = json.load(sys.stdin)["command"]; assert c["exitCode"] == 0, c; print(c["id"])')
    t1=$(date +%s.%N)
    after=$(rss "$pid")
    lines=$(curl -sf -H "$auth" "$url/$sid/cmd/$cid/logs" | wc -l)
    printf '%-40s %-12s %8.2f %10s %18s\n' "${sbxd%/tools/sbxd/sbxd}" \
      "$mode" "$(echo "$t1 - $t0" | bc)" "$lines" "$before -> $after (+$((after - before)))"
    before=$after
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
echo "($bytes bytes a run, one write(2) each, $spin busy-loop iterations between writes)"
