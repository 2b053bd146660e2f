#!/usr/bin/env bash
# The Debian package, built and checked as an operator gets it: build it
# with bin/build-deb (reusing the release build), check its control fields,
# lintian (errors fail) and its file list, install it with apt-get, run
# the installed rrr, its Perl entry points, its man pages and units,
# node-exporter's textfile in Debian's own layout, the ssh push recipe of
# README.mirror over a loopback sshd, and bin/demo against /usr/bin/rrr;
# then upgrade, remove and purge it under a systemctl stand-in that
# records what the maintainer scripts ask systemd for, and check that
# nothing but the operator's files is left.
# Run by .ci/run; by hand as root on a Debian host: .ci/package.sh
# (it installs and purges the package rrr, and prometheus-node-exporter
# when the host has none; it starts no service: a policy-rc.d says no).
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "package: $*" >&2; exit 1; }
apt_opts=(-o DPkg::Options::=--force-confold -o DPkg::Lock::Timeout=120)
apt_get() { apt-get "${apt_opts[@]}" "$@"; }

# What this script starts or creates on the host, undone on any exit.
undo=()
cleanup() {
  local i
  for ((i = ${#undo[@]} - 1; i >= 0; i--)); do eval "${undo[i]}" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
# Packages installed here (node-exporter, sshd) must not start services.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\n# .ci/package.sh: start no service while it runs\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  undo+=("rm -f /usr/sbin/policy-rc.d")
fi

if ! command -v cargo-deb >/dev/null; then
  cargo install --locked cargo-deb
fi
cargo deb --version
# man -w (man-db) and systemd-analyze/systemctl (systemd) check the
# installed files; cargo-deb finds the libc dependency with dpkg-shlibdeps
# (dpkg-dev); lintian checks the package; sshd and ssh run the push recipe.
need=()
command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)
command -v man >/dev/null || need+=(man-db)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v lintian >/dev/null || need+=(lintian)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null || need+=(openssh-client)
if [ ${#need[@]} -gt 0 ]; then
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

bin/build-deb
version="$(target/release/rrr --version | awk '{print $2}')"
arch="$(dpkg --print-architecture)"
deb="target/debian/rrr_${version}_${arch}.deb"
[ -f "$deb" ] || fail "$deb was not built: $(ls target/debian)"
ls -l "$deb" target/release/rrr

# Control fields.
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = rrr ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version: $(field Version)"
[ "$(field Architecture)" = "$arch" ] || fail "Architecture: $(field Architecture)"
for dep in rsync adduser libc6; do
  field Depends | tr ',' '\n' | grep -q "^ *$dep\b" || fail "Depends lacks $dep: $(field Depends)"
done
synopsis="$(field Description | head -n 1)"
[ "${#synopsis}" -le 80 ] && [ "${synopsis%.}" = "$synopsis" ] && [ "$(field Description | sed -n '2{/^ [^ ]/p}')" != "" ] ||
  fail "the synopsis must be one line under 80 characters, no full stop: $(field Description)"
dpkg-deb -f "$deb"

# lintian: every tag is printed, an error fails the build.
if ! lintian --fail-on error --display-info "$deb" >/tmp/rrr-lintian.log 2>&1; then
  cat /tmp/rrr-lintian.log
  fail "lintian found errors"
fi
sed 's/^/  /' /tmp/rrr-lintian.log

# The file list: every file the package must install, the entry points as
# symlinks to rrr, a man page for every page `rrr manpages` writes.
list="$(dpkg-deb -c "$deb" | awk '{ $1=$2=$3=$4=$5=""; sub(/^ +/, ""); print }' | sed 's#^\./#/#')"
has() { grep -qxF -- "$1" <<<"$list" || fail "the package lacks $1"; }
has /usr/bin/rrr
for wrapper in bin/rrr-*; do has "/usr/bin/$(basename "$wrapper") -> rrr"; done
pages="$(mktemp -d)"
target/release/rrr manpages "$pages"
for page in "$pages"/*.1; do has "/usr/share/man/man1/$(basename "$page").gz"; done
for wrapper in bin/rrr-*; do has "/usr/share/man/man1/$(basename "$wrapper").1.gz"; done
rm -rf "$pages"
has /usr/share/bash-completion/completions/rrr
for wrapper in bin/rrr-*; do has "/usr/share/bash-completion/completions/$(basename "$wrapper") -> rrr"; done
has /usr/share/zsh/vendor-completions/_rrr
has /usr/share/fish/vendor_completions.d/rrr.fish
for unit in contrib/systemd/*; do has "/lib/systemd/system/$(basename "$unit")"; done
for doc in README.md README.mirror changelog.gz copyright examples/mirror.toml examples/cpan-authors.env examples/rrr.cron; do
  has "/usr/share/doc/rrr/$doc"
done
! grep -qE '^/(usr/local|etc|home|root|var)/' <<<"$list" || fail "files outside the package's places: $(grep -E '^/(usr/local|etc|home|root|var)/' <<<"$list")"
echo "$list" | grep -v '/$' | sed 's/^/  /'

# Install it as an operator does. Images that drop man pages (docker's
# path-exclude) keep ours.
install_args=(install -y -qq -o DPkg::Options::=--path-include='/usr/share/man/man1/rrr*' "./$deb")
install_deb=(apt-get "${apt_opts[@]}" "${install_args[@]}")
"${install_deb[@]}" >/dev/null
undo+=("apt-get purge -y -qq rrr")
[ "$(command -v rrr)" = /usr/bin/rrr ] || fail "rrr on PATH is $(command -v rrr)"
rrr --version
rrr-client --help >/dev/null || fail "rrr-client --help"
rrr-news --help >/dev/null || fail "rrr-news --help"
man -w rrr
man -w rrr-client
man -w rrr-rmirror
man rrr-fsck 2>/dev/null | grep -qE 'Repairs +by +default' || fail "man rrr-fsck does not describe /usr/bin/rrr-fsck"
getent passwd rrr >/dev/null || fail "no system user rrr"
[ "$(stat -c %U /var/lib/rrr)" = rrr ] || fail "/var/lib/rrr is not rrr's"
systemd-analyze verify rrr-watch.service rrr-rmirror@ci.service rrr-rmirror-once@ci.service \
  rrr-rmirror-once@ci.timer 2>&1 | tee /tmp/rrr-verify.log
[ ! -s /tmp/rrr-verify.log ] || fail "systemd-analyze verify complained about the installed units"

tree="$(mktemp -d)"
undo+=("rm -rf '$tree'")
chmod 755 "$tree"
mkdir -p "$tree/origin/id/A"
echo a >"$tree/origin/id/A/a.tar.gz"
rrr init --quiet "$tree/origin"
# A mirror tree of the user rrr (as README.md's install lines make it).
mirror_tree() { install -d -o rrr -g rrr "$tree/$1"; echo "$tree/$1"; }

# A cron line as the package's user: one quiet pass prints nothing, even on
# a host without node-exporter's textfile directory.
textfile_dir=/var/lib/prometheus/node-exporter
if [ ! -e "$textfile_dir" ]; then
  m="$(mirror_tree cron)"
  said="$(runuser -u rrr -- rrr --quiet rmirror --remote "$tree/origin/RECENT.recent" --localroot "$m" \
    --prometheus "$textfile_dir/rrr-ci.prom" 2>&1)" || fail "rmirror as rrr: $said"
  [ -z "$said" ] || fail "a quiet pass as rrr said: $said"
  [ -f "$m/id/A/a.tar.gz" ] || fail "the pass as rrr mirrored nothing"
fi

# Debian's prometheus-node-exporter, installed after rrr: its textfile
# directory (root:root 0755 in that package) triggers rrr's postinst,
# which lets the group rrr write there, sticky (root:rrr 1775).
if ! dpkg -s prometheus-node-exporter >/dev/null 2>&1 && [ ! -e /var/lib/prometheus ]; then
  apt_get install -y -qq --no-install-recommends prometheus-node-exporter >/dev/null
  undo+=("apt-get purge -y -qq prometheus-node-exporter" "rm -f '$textfile_dir/ci-other.prom'")
fi
echo "textfile directory: $(stat -c '%U:%G %a' "$textfile_dir")"
[ "$(stat -c '%U:%G %a' "$textfile_dir")" = "root:rrr 1775" ] ||
  fail "$textfile_dir is $(stat -c '%U:%G %a' "$textfile_dir") after node-exporter's install, not root:rrr 1775"
m="$(mirror_tree textfile)"
said="$(runuser -u rrr -- rrr --quiet rmirror --remote "$tree/origin/RECENT.recent" --localroot "$m" \
  --prometheus "$textfile_dir/rrr-ci.prom" 2>&1)" || fail "rmirror as rrr: $said"
[ -z "$said" ] || fail "a quiet pass as rrr with node-exporter's directory said: $said"
[ "$(stat -c %U "$textfile_dir/rrr-ci.prom")" = rrr ] || fail "no textfile written by rrr"
grep -q '^rrr_mirror_last_success_timestamp_seconds{' "$textfile_dir/rrr-ci.prom" || fail "$(cat "$textfile_dir/rrr-ci.prom")"
# Another collector's file is safe from the group rrr (the sticky bit).
echo 'ci_other 1' >"$textfile_dir/ci-other.prom"
! runuser -u rrr -- rm -f "$textfile_dir/ci-other.prom" 2>/dev/null && [ -f "$textfile_dir/ci-other.prom" ] ||
  fail "the user rrr could remove another collector's textfile"

# The push recipe of README.mirror (section 13), as it stands there, with
# the packaged account: a key of the upstream may run `rrr trigger` on
# this mirror over ssh, as the account rrr-push in the group rrr.
readme=/usr/share/doc/rrr/README.mirror
recipe() { grep -qF -- "$1" "$readme" || fail "README.mirror lacks the line: $1"; }
recipe 'adduser --system --ingroup rrr --shell /bin/sh --home /var/lib/rrr-push rrr-push'
recipe 'install -d -m 0700 -o rrr-push -g rrr /var/lib/rrr-push/.ssh'
recipe "echo 'command=\"/usr/bin/rrr trigger --localroot /srv/CPAN\",restrict ssh-ed25519 AAAA... push from origin' >>/var/lib/rrr-push/.ssh/authorized_keys"
adduser --system --ingroup rrr --shell /bin/sh --home /var/lib/rrr-push rrr-push >/dev/null
undo+=("userdel -r rrr-push")
install -d -m 0700 -o rrr-push -g rrr /var/lib/rrr-push/.ssh
ssh-keygen -q -t ed25519 -N '' -C 'push from origin' -f "$tree/push_key"
m="$(mirror_tree push)"
echo "command=\"/usr/bin/rrr trigger --localroot $m\",restrict $(cat "$tree/push_key.pub")" >>/var/lib/rrr-push/.ssh/authorized_keys
# A loopback sshd with the host's own configuration.
[ -e /etc/ssh/ssh_host_ed25519_key ] || ssh-keygen -A
mkdir -p /run/sshd
port="$(perl -MIO::Socket::INET -e 'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1:0")->sockport')"
/usr/sbin/sshd -D -e -p "$port" -o ListenAddress=127.0.0.1 -o PidFile="$tree/sshd.pid" 2>"$tree/sshd.log" &
sshd_pid=$!
undo+=("kill $sshd_pid")
# The mirror's loop, polling once an hour: only the trigger makes it pass.
runuser -u rrr -- rrr --quiet rmirror --loop --interval 3600 --remote "$tree/origin/RECENT.recent" --localroot "$m" \
  2>"$tree/loop.log" &
loop_pid=$!
undo+=("kill $loop_pid")
wait_for() { # what, seconds, test...
  local what="$1" until=$((SECONDS + $2))
  shift 2
  until "$@"; do
    [ "$SECONDS" -lt "$until" ] || fail "no $what after waiting: sshd: $(cat "$tree/sshd.log"); loop: $(cat "$tree/loop.log")"
    sleep 0.2
  done
}
wait_for "listening sshd" 30 bash -c "exec 2>/dev/null; exec 3<>/dev/tcp/127.0.0.1/$port"
wait_for "first pass of the loop" 60 test -p "$m/.rrr/trigger" -a -f "$m/id/A/a.tar.gz"
mkdir -p "$tree/origin/id/B"
echo b >"$tree/origin/id/B/b.tar.gz"
rrr update --quiet "$tree/origin/RECENT.recent" id/B/b.tar.gz
said="$(ssh -p "$port" -i "$tree/push_key" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
  -o LogLevel=ERROR rrr-push@127.0.0.1 trigger 2>&1)" || fail "ssh rrr-push@127.0.0.1 trigger: $said"
echo "push over ssh: $said"
wait_for "pushed file in the mirror" 60 test -f "$m/id/B/b.tar.gz"
kill "$loop_pid" "$sshd_pid"
wait "$loop_pid" "$sshd_pid" || true

RRR=/usr/bin/rrr bin/demo >/tmp/rrr-demo.log 2>&1 || { cat /tmp/rrr-demo.log; fail "bin/demo with /usr/bin/rrr"; }
grep -q "the mirror is identical to the origin" /tmp/rrr-demo.log || fail "bin/demo: $(cat /tmp/rrr-demo.log)"

# Upgrade, remove and purge as on a host that runs systemd: in a mount
# namespace, /run/systemd/system exists and `systemctl` (first in the PATH
# apt gives dpkg) is a stand-in that records its arguments. The operator has enabled units (real links, made
# by the real systemctl), written an env file and a drop-in.
shim="$(mktemp -d)"
undo+=("rm -rf '$shim'")
printf '#!/bin/sh\necho "$*" >>%s/calls\n' "$shim" >"$shim/systemctl"
chmod 755 "$shim/systemctl"
apt_on_systemd_host() {
  unshare --mount sh -c 'mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system && exec "$@"' \
    sh apt-get "${apt_opts[@]}" -o DPkg::Path="$shim:/usr/sbin:/usr/bin:/sbin:/bin" "$@" >/dev/null
}
systemctl enable rrr-rmirror@ci.service rrr-rmirror-once@ci2.timer rrr-watch.service 2>&1 | sed 's/^/  /'
install -d /etc/rrr /etc/systemd/system/rrr-rmirror@ci.service.d
undo+=("rm -rf /etc/rrr/ci.env /etc/systemd/system/rrr-rmirror@ci.service.d; rmdir /etc/rrr")
echo "RRR_REMOTE=$tree/origin/RECENT.recent" >/etc/rrr/ci.env
printf '[Service]\nReadWritePaths=%s\n' "$tree" >/etc/systemd/system/rrr-rmirror@ci.service.d/override.conf
calls() { cat "$shim/calls" 2>/dev/null; : >"$shim/calls"; }
apt_on_systemd_host "${install_args[@]}" --reinstall
said="$(calls)"
echo "upgrade asked systemd: $said"
grep -qx "try-restart rrr-rmirror@\*.service rrr-watch.service" <<<"$said" || fail "an upgrade restarts no running unit: $said"
apt_on_systemd_host remove -y -qq rrr
said="$(calls)"
echo "remove asked systemd: $said"
grep -qx "stop rrr-rmirror-once@\*.timer rrr-rmirror-once@\*.service rrr-rmirror@\*.service rrr-watch.service" <<<"$said" ||
  fail "remove stops no running unit: $said"

# Remove: every file it installed is gone (configuration and the textfile
# stay until purge).
left=()
while IFS= read -r f; do
  f="${f%% -> *}"
  case "$f" in */) continue ;; esac
  if [ -e "$f" ] || [ -L "$f" ]; then left+=("$f"); fi
done <<<"$list"
[ ${#left[@]} -eq 0 ] || fail "left behind after apt-get remove: ${left[*]}"
[ -L /etc/systemd/system/multi-user.target.wants/rrr-rmirror@ci.service ] || fail "remove dropped the operator's enable"
apt_on_systemd_host purge -y -qq rrr

# Purge: nothing the package or its units made is left; the operator's
# files are (README.mirror, section 9).
made="$(find /etc/systemd/system -name 'rrr-*' -type l; find "$textfile_dir" -name 'rrr*.prom*'; ls -d /var/lib/rrr 2>/dev/null)" || true
[ -z "$made" ] || fail "left behind after apt-get purge: $made"
[ "$(stat -c '%U:%G %a' "$textfile_dir")" = "root:root 755" ] || fail "purge left $textfile_dir $(stat -c '%U:%G %a' "$textfile_dir")"
[ -f "$textfile_dir/ci-other.prom" ] || fail "purge removed another collector's textfile"
for kept in /etc/rrr/ci.env /etc/systemd/system/rrr-rmirror@ci.service.d/override.conf "$tree/push/id/B/b.tar.gz"; do
  [ -e "$kept" ] || fail "purge removed the operator's $kept"
done
getent passwd rrr >/dev/null || fail "purge removed the user rrr (it may own trees)"

# Installed while node-exporter's directory exists: postinst opens it at
# once; purge closes it again.
"${install_deb[@]}" >/dev/null
[ "$(stat -c '%U:%G %a' "$textfile_dir")" = "root:rrr 1775" ] || fail "install left $textfile_dir $(stat -c '%U:%G %a' "$textfile_dir")"
apt_get purge -y -qq rrr >/dev/null
[ "$(stat -c '%U:%G %a' "$textfile_dir")" = "root:root 755" ] || fail "purge left $textfile_dir $(stat -c '%U:%G %a' "$textfile_dir")"
echo "package: $deb checked ($(du -k "$deb" | cut -f1) KiB; rrr $(du -k target/release/rrr | cut -f1) KiB)"
