#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sbxd-net end to end, as root: a sandbox-like network namespace (owned by a
# user namespace of uid 65534) gets tap0 from sbxd-net and must reach a
# server outside the host but none of the host's own, and sbxd-net must go
# when its control socket does. Also prints what the user-mode stack costs.
#   netd_selftest.sh SBXD_NET      (exit 77: skipped, not root or no tools)
set -u
[ $# -eq 1 ] || { echo "usage: $0 SBXD_NET" >&2; exit 2; }
net_bin=$(realpath "$1")
py=/usr/bin/python3
if [ "$(id -u)" -ne 0 ]; then echo "skip: needs root"; exit 77; fi
for t in ip unshare nsenter setpriv "$py"; do
  command -v "$t" >/dev/null || { echo "skip: no $t"; exit 77; }
done

sub=${NETD_SUBNET:-10.231.0}      # host end .1, "outside" .2
base=$((20000 + $$ % 20000))      # ports, per run
p_lo=$base p_veth=$((base + 1)) p_any=$((base + 2)) p_udp=$((base + 3))
p_http=$((base + 4)) p_echo=$((base + 5))
veth_h=nfh$$ veth_o=nfo$$
tmp=$(mktemp -d)
chmod 755 "$tmp"   # the probes run as the sandbox's root, uid 65534 outside
pids=()
fail=0

cleanup() {
  # Only what this script started; namespaces die with their last process.
  exec 7>&- 8>&- 2>/dev/null
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  ip link del "$veth_h" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

ok() { echo "PASS: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
# wait_for FILE TEXT: until FILE holds TEXT, 10 s at most.
wait_for() {
  for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# ---- helpers: servers, a holder for sbxd-net's fds, probes --------------------------
cat >"$tmp/servers.py" <<'EOF'
# servers.py KIND:ADDR:PORT[:TEXT] ...: banner (send TEXT, close), echo, udpecho.
import socket, sys, threading
def banner(s, text):
    def one(c):
        # Read what the client sends before closing: unread data makes a reset.
        c.sendall(text.encode() + b"\n"); c.shutdown(socket.SHUT_WR)
        while c.recv(4096):
            pass
        c.close()
    while True:
        c, _ = s.accept(); threading.Thread(target=one, args=(c,), daemon=True).start()
def echo(s):
    def one(c):
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while (b := c.recv(65536)):
            c.sendall(b)
    while True:
        c, _ = s.accept(); threading.Thread(target=one, args=(c,), daemon=True).start()
def udpecho(s):
    while True:
        b, a = s.recvfrom(2048); s.sendto(b, a)
for spec in sys.argv[1:]:
    kind, addr, port, *text = spec.split(":")
    if kind == "udpecho":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((addr, int(port)))
        threading.Thread(target=udpecho, args=(s,), daemon=True).start(); continue
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port))); s.listen(64)
    fn, args = (banner, (s, text[0])) if kind == "banner" else (echo, (s,))
    threading.Thread(target=fn, args=args, daemon=True).start()
print("listening", flush=True)
threading.Event().wait()
EOF

cat >"$tmp/holder.py" <<'EOF'
# holder.py SANDBOX_PID -- sbxd-net args: what sbxd does. fd 3 a socketpair end,
# 4 and 5 the sandbox's user and network namespaces; waits for 'R', then holds
# the other end until its stdin ends, closes it and reports how sbxd-net ended.
import os, signal, socket, subprocess, sys, time
pid, cmd = sys.argv[1], sys.argv[3:]
ours, theirs = socket.socketpair()
user = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY)
net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
def fds():
    for i, fd in enumerate((theirs.fileno(), user, net)):
        os.dup2(fd, 3 + i)
t = time.monotonic()
p = subprocess.Popen(cmd, preexec_fn=fds, close_fds=False, stdout=subprocess.PIPE)
theirs.close(); os.close(user); os.close(net)
ours.settimeout(10)
try:
    r = ours.recv(16)
except socket.timeout:
    r = b"(timeout)"
print(f"pid {p.pid}", flush=True)
print(f"control byte {r!r} after {(time.monotonic() - t) * 1000:.0f} ms", flush=True)
sys.stdin.read()
ours.close()
t = time.monotonic()
signal.alarm(5)
_, status = os.waitpid(p.pid, 0)
print(f"exit {os.waitstatus_to_exitcode(status)} {(time.monotonic() - t) * 1000:.1f} ms after the "
      f"control socket closed; stdout {p.stdout.read()!r}", flush=True)
EOF

cat >"$tmp/probe.py" <<'EOF'
# probe.py TEST ARGS: one check from inside a network namespace; prints one
# line and exits 0 when the result is the expected one.
import errno, os, random, socket, struct, sys, time
test, args = sys.argv[1], sys.argv[2:]
def ms(t): return (time.monotonic() - t) * 1000
def done(good, text):
    print(text); sys.exit(0 if good else 1)
def ip2b(a): return socket.inet_aton(a)
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack(f">{len(b) // 2}H", b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff

if test == "get":  # get HOST PORT PATH: expect success
    host, port, path = args[0], int(args[1]), args[2]
    t = time.monotonic()
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(f"GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
    n, first = 0, b""
    while (b := s.recv(1 << 20)):
        n += len(b); first += b[:4096 - len(first)]
    secs = ms(t) / 1000
    body = first.split(b"\r\n\r\n", 1)[-1] if first.startswith(b"HTTP/") else first
    rate = f" ({n / secs / 1e6:.0f} MB/s)" if n > 1e6 else f", starts {body[:40]!r}"
    done(n > 0, f"{n} bytes in {secs:.3f} s{rate}")
if test == "refused":  # refused HOST PORT: expect ECONNREFUSED fast
    t = time.monotonic()
    try:
        s = socket.create_connection((args[0], int(args[1])), timeout=5)
        done(False, f"CONNECTED after {ms(t):.1f} ms, server said {s.recv(100)!r}")
    except ConnectionRefusedError:
        e = ms(t); done(e < 1000, f"connection refused after {e:.1f} ms")
    except OSError as x:
        done(False, f"{x} after {ms(t):.1f} ms")
if test == "udp_rejected":  # udp_rejected HOST PORT: expect an ICMP error
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((args[0], int(args[1]))); s.settimeout(3)
    t = time.monotonic(); s.send(b"ping")
    try:
        done(False, f"REPLY {s.recv(100)!r}")
    except socket.timeout:
        done(False, f"no ICMP error within {ms(t):.0f} ms")
    except OSError as x:
        done(x.errno in (errno.EHOSTUNREACH, errno.ECONNREFUSED),
             f"recv: {errno.errorcode[x.errno]} ({x.strerror}) after {ms(t):.1f} ms")
if test == "dns":  # dns SERVER NAME: anything but an ICMP error
    q = struct.pack(">6H", random.randrange(65536), 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in args[1].split(".")) + b"\0"
    q += struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((args[0], 53)); s.settimeout(3)
    t = time.monotonic(); s.send(q)
    try:
        r = s.recv(4096)
        done(True, f"answer of {len(r)} bytes after {ms(t):.1f} ms, rcode {r[3] & 15}")
    except socket.timeout:
        done(True, f"no answer within {ms(t):.0f} ms and no ICMP error: forwarded, "
                   "no reachable upstream resolver")
    except OSError as x:
        done(False, f"ICMP error: {errno.errorcode[x.errno]} after {ms(t):.1f} ms")
if test == "rtt":  # rtt HOST PORT N: 1-byte round trips on one connection
    s = socket.create_connection((args[0], int(args[1])), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    n = int(args[2]); t = time.monotonic()
    for _ in range(n):
        s.sendall(b"x"); s.recv(1)
    r = ms(t) * 1000 / n
    c = []
    for _ in range(100):
        t = time.monotonic()
        socket.create_connection((args[0], int(args[1])), timeout=10).close()
        c.append(ms(t) * 1000)
    c.sort()
    done(True, f"round trip {r:.0f} us (mean of {n}); connect {c[50]:.0f} us "
               f"(median of 100, min {c[0]:.0f}, max {c[-1]:.0f})")
if test == "raw_syn":  # raw_syn DST PORT EXPECT(rst|synack): a frame written to tap0 itself
    dst, port, expect = args[0], int(args[1]), args[2]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind(("tap0", 0)); s.settimeout(0.2)
    me, sport, seq = s.getsockname()[4], random.randrange(30000, 60000), random.randrange(1 << 32)
    src = "10.0.2.100"
    tcp = struct.pack(">HHIIBBHHH", sport, port, seq, 0, 5 << 4, 0x02, 64240, 0, 0)
    tcp = tcp[:16] + struct.pack(">H", csum(ip2b(src) + ip2b(dst) + struct.pack(">HH", 6, 20) + tcp)) + tcp[18:]
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40, 1, 0, 64, 6, 0, ip2b(src), ip2b(dst))
    ip = ip[:10] + struct.pack(">H", csum(ip)) + ip[12:]
    s.send(bytes.fromhex("52550a000202") + me + b"\x08\x00" + ip + tcp)
    t = time.monotonic()
    while ms(t) < 3000:
        try:
            f = s.recv(65536)
        except socket.timeout:
            continue
        ipr = f[14:]
        if len(ipr) < 40 or ipr[9] != 6 or ipr[12:16] != ip2b(dst) or ipr[16:20] != ip2b(src):
            continue
        th = ipr[(ipr[0] & 15) * 4:]
        if struct.unpack(">HH", th[:4]) != (port, sport):
            continue
        flags = th[13]
        got = "rst" if flags & 0x04 else "synack" if flags & 0x12 == 0x12 else f"flags {flags:#x}"
        done(got == expect, f"{got} from {dst}:{port} after {ms(t):.1f} ms")
    done(False, f"nothing from {dst}:{port} within 3 s")
done(False, f"unknown probe {test}")
EOF

# ---- the world: "outside" (a namespace behind a veth) and the host's own servers ----
if ip -4 route show | grep -q "^$sub\."; then echo "skip: $sub.0/24 already routed here"; exit 77; fi
unshare --net sleep infinity & outside=$!; pids+=("$outside")
sleep 0.2
ip link add "$veth_h" type veth peer name "$veth_o" || exit 1
ip link set "$veth_o" netns "$outside"
ip addr add "$sub.1/24" dev "$veth_h"; ip link set "$veth_h" up
nsenter --net=/proc/$outside/ns/net sh -c \
  "ip addr add $sub.2/24 dev $veth_o && ip link set $veth_o up && ip link set lo up" || exit 1
mkdir "$tmp/www"
head -c 100M /dev/zero >"$tmp/www/big"
echo "outside-server" >"$tmp/www/index.html"
nsenter --net=/proc/$outside/ns/net "$py" -m http.server --bind "$sub.2" --directory "$tmp/www" \
  "$p_http" >/dev/null 2>&1 & pids+=($!)
nsenter --net=/proc/$outside/ns/net "$py" "$tmp/servers.py" "echo:$sub.2:$p_echo" \
  >"$tmp/outside.out" 2>&1 & pids+=($!)
"$py" "$tmp/servers.py" "banner:127.0.0.1:$p_lo:host-loopback" "banner:$sub.1:$p_veth:host-veth" \
  "banner:0.0.0.0:$p_any:host-any-address" "udpecho:$sub.1:$p_udp" >"$tmp/host.out" 2>&1 & pids+=($!)
wait_for "$tmp/host.out" listening && wait_for "$tmp/outside.out" listening || { echo "servers did not start"; exit 1; }
for _ in $(seq 50); do "$py" "$tmp/probe.py" get "$sub.2" "$p_http" / >/dev/null 2>&1 && break; sleep 0.1; done
host_ip=$(ip -4 -o addr show scope global | awk -v s="$sub." '$4 !~ "^"s {split($4, a, "/"); print a[1]; exit}')

# ---- a sandbox: sbxd-net [args] for a fresh user+network namespace of uid 65534 ----
# start_sandbox NAME FD ARGS...: sets sbx_<NAME> (namespace holder), holder_<NAME> (the
# stand-in for sbxd) and net_<NAME> (sbxd-net); FD is the write end of the holder's stdin.
start_sandbox() {
  local name=$1 fd=$2 holder sbx; shift 2
  setpriv --reuid 65534 --regid 65534 --clear-groups unshare -Urn sleep infinity 7>&- 8>&- &
  sbx=$!; pids+=("$sbx")
  sleep 0.2
  mkfifo "$tmp/$name.in"
  # 7>&- 8>&-: only this script may hold a holder's stdin open.
  "$py" "$tmp/holder.py" "$sbx" -- "$net_bin" "$@" <"$tmp/$name.in" >"$tmp/$name.out" 2>&1 7>&- 8>&- &
  holder=$!; pids+=("$holder")
  eval "exec $fd>\"\$tmp/\$name.in\""
  wait_for "$tmp/$name.out" "control byte" || { cat "$tmp/$name.out"; exit 1; }
  eval "sbx_$name=$sbx holder_$name=$holder net_$name=$(awk '/^pid /{print $2}' "$tmp/$name.out")"
  sed -n 's/^control byte/  sbxd-net: control byte/p' "$tmp/$name.out"
}
# in NAME TEST ARGS: run a probe inside sandbox NAME.
in_sbx() {
  local name=$1; shift
  local pid; eval "pid=\$sbx_$name"
  nsenter --target "$pid" --user --net "$py" "$tmp/probe.py" "$@"
}
check() { # check DESCRIPTION SANDBOX PROBE ARGS...
  local what=$1 out; shift
  if out=$(in_sbx "$@" 2>&1); then ok "$what: $out"; else bad "$what: $out"; fi
}

echo "== sbxd-net (host loopback refused), --user 65534:65534; host address $host_ip, outside $sub.2"
start_sandbox a 7 --user 65534:65534
grep -q "control byte b'R'" "$tmp/a.out" && ok "wrote 'R' when ready" || bad "no 'R': $(cat "$tmp/a.out")"
st=/proc/$net_a/status
echo "  confined: $(grep -E '^(Uid|NoNewPrivs|Seccomp):' "$st" | tr -s '\t ' ' ' | paste -sd';')"
echo "  its root: $(cd /proc/$net_a/root && find . -mindepth 1 | sort | paste -sd' ')"
[ "$(awk '/^Seccomp:/{print $2}' "$st")" = 2 ] && [ "$(awk '/^Uid:/{print $2}' "$st")" = 65534 ] &&
  ok "runs as 65534 under seccomp" || bad "not confined"
echo "  tap0: $(nsenter --target "$sbx_a" --user --net ip -o link show tap0 | grep -o 'mtu [0-9]*'),"\
"$(nsenter --target "$sbx_a" --user --net ip -4 -o addr show tap0 | awk '{print $4}');"\
"$(nsenter --target "$sbx_a" --user --net ip route | paste -sd';')"

check "TCP to the outside server $sub.2" a get "$sub.2" "$p_http" /
check "TCP to the host's 127.0.0.1 via 10.0.2.2" a refused 10.0.2.2 "$p_lo"
check "TCP to the host's veth end $sub.1" a refused "$sub.1" "$p_veth"
check "TCP to the host's $host_ip (server on 0.0.0.0)" a refused "$host_ip" "$p_any"
check "frame to 127.0.0.1 written to tap0 (the kernel would never route it)" a raw_syn 127.0.0.1 "$p_lo" rst
check "frame to the host's $sub.1 written to tap0" a raw_syn "$sub.1" "$p_veth" rst
check "UDP to the host's $sub.1 (connected socket)" a udp_rejected "$sub.1" "$p_udp"
check "UDP to 10.0.2.3 port 5353 (not DNS)" a udp_rejected 10.0.2.3 5353
check "DNS to 10.0.2.3:53" a dns 10.0.2.3 example.com
echo "  (the sandbox's own 127.0.0.1 is its own loopback: $(in_sbx a refused 127.0.0.1 "$p_lo"))"
# The host gains an address: refused at once (netlink), not after the 5 s re-read.
ip addr add "$sub.77/32" dev "$veth_h"
sleep 0.05
check "TCP to $sub.77, added to the host 50 ms before (server on 0.0.0.0)" a refused "$sub.77" "$p_any"

echo "== sbxd-net --allow-host"
start_sandbox b 8 --allow-host --user 65534:65534
check "TCP to the host's 127.0.0.1 via 10.0.2.2" b get 10.0.2.2 "$p_lo" /
check "frame to 127.0.0.1 written to tap0 reaches the host's loopback" b raw_syn 127.0.0.1 "$p_lo" synack
check "TCP to the host's veth end $sub.1" b get "$sub.1" "$p_veth" /

echo "== no user namespace left for sbxd-net to confine itself in"
# Inside a user namespace whose limit allows just the sandbox's: sbxd-net
# must fail and say why, never run unconfined.
cat >"$tmp/nouserns.sh" <<EOF
unshare --user --map-root-user --net sleep infinity & s=\$!
sleep 0.2
echo 1 >/proc/sys/user/max_user_namespaces
"$py" "$tmp/holder.py" "\$s" -- "$net_bin" </dev/null
kill \$s
EOF
out=$(unshare --user --map-root-user bash "$tmp/nouserns.sh" 2>&1 7>&- 8>&-)
msg=$(echo "$out" | grep '^sbxd-net:')
case $out in *"exit 1 "*) [ -n "$msg" ] && ok "exit 1, $msg" || bad "$out" ;; *) bad "$out" ;; esac

echo "== cost (100 MB over HTTP from $sub.2; 1-byte TCP round trips)"
echo "  host, direct:      $("$py" "$tmp/probe.py" get "$sub.2" "$p_http" /big)"
cpu() { awk '{print ($14 + $15) * 10}' "/proc/$net_a/stat"; }   # ms, at 100 ticks/s
c0=$(cpu)
echo "  sandbox, sbxd-net: $(in_sbx a get "$sub.2" "$p_http" /big); sbxd-net CPU $(( $(cpu) - c0 )) ms"
echo "  host, direct:      $("$py" "$tmp/probe.py" rtt "$sub.2" "$p_echo" 2000)"
echo "  sandbox, sbxd-net: $(in_sbx a rtt "$sub.2" "$p_echo" 2000)"
echo "  sbxd-net RSS after: $(awk '/^VmRSS/{print $2 " kB"}' /proc/$net_a/status)"

echo "== ending"
exec 7>&-   # sbxd closes the control socket
if wait_for "$tmp/a.out" "^exit"; then
  line=$(grep '^exit' "$tmp/a.out")
  case $line in "exit 0 "*) ok "$line" ;; *) bad "$line" ;; esac
else
  bad "sbxd-net did not exit after the control socket closed"
fi
# Gone, or a zombie waiting for whoever inherited it.
gone() { [ ! -d "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
disown "$holder_b"
kill -9 "$holder_b"   # sbxd dies: its end of the control socket goes with it
t0=$(date +%s%N)
until gone "$net_b" || [ $(( ($(date +%s%N) - t0) / 1000000 )) -ge 1000 ]; do sleep 0.005; done
if gone "$net_b"; then
  ok "sbxd-net gone $(( ($(date +%s%N) - t0) / 1000000 )) ms after its parent was killed"
else
  bad "sbxd-net still running 1 s after its parent was killed"
fi
for f in a b; do
  err=$(grep -v -e '^pid ' -e '^control byte' -e '^exit ' "$tmp/$f.out")
  [ -z "$err" ] || echo "  sbxd-net ($f) stderr: $err"
done
[ $fail -eq 0 ] && echo "all passed" || echo "SOME FAILED"
exit $fail
