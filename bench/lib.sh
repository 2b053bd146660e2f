# Shared by the bench scripts: a free loopback port and an rsync daemon
# config (use chroot = no, the current user, read only) serving $2 as [origin].
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
write_rsyncd_conf() {  # write_rsyncd_conf DIR ORIGIN_PATH
    cat > "$1/rsyncd.conf" <<CONF
pid file = $1/rsyncd.pid
log file = $1/rsyncd.log
use chroot = no
uid = $(id -u)
gid = $(id -g)
read only = yes
reverse lookup = no
[origin]
    path = $2
CONF
}
# workdir TEMPLATE: a work directory (mktemp -d TEMPLATE) in W, removed on
# exit unless KEEP is set, with the daemon of start_rsyncd (DPID) stopped.
workdir() {
    W=$(mktemp -d "$1")
    DPID=
    trap 'bench_cleanup' EXIT
}
bench_cleanup() {
    [ -n "$DPID" ] && { kill "$DPID"; wait "$DPID"; } 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$W"
}
# start_rsyncd DIR: `rsync --daemon` with DIR/rsyncd.conf on a free loopback
# port, waited for until it listens; sets PORT and DPID (the caller's cleanup
# kills DPID).
start_rsyncd() {
    PORT=$(freeport)
    rsync --daemon --no-detach --address=127.0.0.1 --port="$PORT" --config="$1/rsyncd.conf" &
    DPID=$!
    for _ in $(seq 1 50); do grep -q "listening on port" "$1/rsyncd.log" 2>/dev/null && break; sleep 0.1; done
}
# Timing: now (seconds, ns), el START (seconds since START, 3 decimals), load (1/5/15 min).
now() { date +%s.%N; }
el() { python3 -c "print(f'{$(now)-$1:.3f}')"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
