#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What `sbxrun verify` costs over running the same steps on the host.
#
#   bench/verify-bench.sh [--rounds N] [--sbxrun PATH] [--sbxd PATH] DIR [PATCH]
#
# Each round runs, in turn:
#   host     bench/verify-host.sh DIR [PATCH]: the steps directly on this
#            machine (its "total" line);
#   verify   sbxrun verify DIR [--patch PATCH] --json against an sbxd this
#            script starts once (so a private sbxd's start is not counted):
#            "run" is the run's own durationMs (sandbox create to verdict,
#            the sandbox's stop included), "wall" the whole command (the
#            workspace read and patched on the host, connecting, the run);
#   private  the same with no endpoint: verify starts and stops a private
#            sbxd of its own, as the README's first command does.
# Then the median of each over the rounds and the ratios to the host.
# The verdicts must agree (the host's exit status and verify's).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
rounds=5 sbxrun="$root/build/tools/sbxrun/sbxrun" sbxd="$root/build/tools/sbxd/sbxd"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --sbxrun) sbxrun=$2; shift ;;
    --sbxd) sbxd=$2; shift ;;
    -*) echo "verify-bench.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
[ $# -ge 1 ] && [ $# -le 2 ] || { sed -n '5p' "$0" | sed 's/^# *//' >&2; exit 2; }
dir=$1 patch=${2:-}
tmp=$(mktemp -d /tmp/verify-bench-XXXXXX)
chmod 711 "$tmp"
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

"$sbxd" --listen "unix:$tmp/sbxd.sock" --state-dir "$tmp/state" >"$tmp/out" 2>"$tmp/sbxd.log" &
pid=$!
for _ in $(seq 100); do grep -q listening "$tmp/out" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$tmp/out" || { echo "sbxd did not start: $(tail -3 "$tmp/sbxd.log")" >&2; exit 1; }

now_ms() { date +%s%3N; }
host=() run=() wall=() priv=()
for r in $(seq "$rounds"); do
  out=$("$here/verify-host.sh" "$dir" ${patch:+"$patch"} 2>/dev/null); hrc=$?
  host+=("$(printf '%s\n' "$out" | awk '$1 == "total" {print $2}')")

  t0=$(now_ms)
  json=$(SBXRUN_ENDPOINT="unix:$tmp/sbxd.sock" SBXRUN_TOKEN="$(cat "$tmp/state/token")" \
    "$sbxrun" verify "$dir" ${patch:+--patch "$patch"} --json 2>/dev/null); vrc=$?
  wall+=($(( $(now_ms) - t0 )))
  run+=("$(printf '%s' "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["durationMs"])')")

  t0=$(now_ms)
  env -u SBXRUN_ENDPOINT -u SBXRUN_TOKEN XDG_STATE_HOME="$tmp/none" SBXD="$sbxd" \
    "$sbxrun" verify "$dir" ${patch:+--patch "$patch"} >/dev/null 2>&1; prc=$?
  priv+=($(( $(now_ms) - t0 )))
  if [ "$hrc" -ne "$vrc" ] || [ "$vrc" -ne "$prc" ]; then
    echo "round $r: the verdicts differ: host exit $hrc, verify $vrc, private $prc" >&2
    exit 1
  fi
  echo "round $r: host ${host[-1]} ms, verify run ${run[-1]} ms (wall ${wall[-1]} ms), private sbxd ${priv[-1]} ms (exit $vrc)" >&2
done

python3 - "$dir" "${patch:-(none)}" "$rounds" "${host[*]}" "${run[*]}" "${wall[*]}" "${priv[*]}" <<'EOF'
import statistics, sys
d, p, n = sys.argv[1], sys.argv[2], sys.argv[3]
h, r, w, v = ([int(x) for x in a.split()] for a in sys.argv[4:8])
m = statistics.median
print(f"verify {d} (patch {p}), median of {n} rounds")
print(f"  host (the same steps on this machine)   {m(h):8.0f} ms")
print(f"  verify, sandbox create to verdict       {m(r):8.0f} ms   {m(r) / m(h):5.2f}x the host")
print(f"  verify, whole command (running sbxd)    {m(w):8.0f} ms   {m(w) / m(h):5.2f}x")
print(f"  verify, whole command (private sbxd)    {m(v):8.0f} ms   {m(v) / m(h):5.2f}x")
EOF
