#!/usr/bin/env bash
# The Debian package, built and checked as an operator gets it: build it
# with bin/build-deb (reusing the release build), check its file list and
# control fields, install it with apt-get, run the installed rrr, its
# Perl entry points, its man page and units, and bin/demo against
# /usr/bin/rrr, then remove it and check that nothing is left behind.
# Run by .ci/run; by hand as root on a Debian host: .ci/package.sh
# (it installs and removes the package rrr).
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "package: $*" >&2; exit 1; }
apt_get() { apt-get -o DPkg::Lock::Timeout=120 "$@"; }

if ! command -v cargo-deb >/dev/null; then
  cargo install --locked cargo-deb
fi
cargo deb --version
# man -w (man-db) and systemd-analyze (systemd) check the installed files;
# cargo-deb finds the libc dependency with dpkg-shlibdeps (dpkg-dev).
need=()
command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)
command -v man >/dev/null || need+=(man-db)
command -v systemd-analyze >/dev/null || need+=(systemd)
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
dpkg-deb -f "$deb"

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
has /usr/share/zsh/vendor-completions/_rrr
has /usr/share/fish/vendor_completions.d/rrr.fish
for unit in contrib/systemd/*; do has "/lib/systemd/system/$(basename "$unit")"; done
for doc in README.md README.mirror examples/mirror.toml examples/cpan-authors.env examples/rrr.cron; do
  has "/usr/share/doc/rrr/$doc"
done
! grep -qE '^/(usr/local|etc|home|root|var)/' <<<"$list" || fail "files outside the package's places: $(grep -E '^/(usr/local|etc|home|root|var)/' <<<"$list")"
echo "$list" | grep -v '/$' | sed 's/^/  /'

# Install it as an operator does. Images that drop man pages (docker's
# path-exclude) keep ours.
apt_get install -y -qq -o DPkg::Options::=--path-include='/usr/share/man/man1/rrr*' "./$deb" >/dev/null
[ "$(command -v rrr)" = /usr/bin/rrr ] || fail "rrr on PATH is $(command -v rrr)"
rrr --version
rrr-client --help >/dev/null || fail "rrr-client --help"
rrr-news --help >/dev/null || fail "rrr-news --help"
man -w rrr
man -w rrr-client
man -w rrr-rmirror
getent passwd rrr >/dev/null || fail "no system user rrr"
[ "$(stat -c %U /var/lib/rrr)" = rrr ] || fail "/var/lib/rrr is not rrr's"
systemd-analyze verify rrr-watch.service rrr-rmirror@ci.service rrr-rmirror-once@ci.service \
  rrr-rmirror-once@ci.timer 2>&1 | tee /tmp/rrr-verify.log
[ ! -s /tmp/rrr-verify.log ] || fail "systemd-analyze verify complained about the installed units"
# A cron line as the package's user: one quiet pass prints nothing, even on
# a host without node-exporter's textfile directory.
if [ ! -e /var/lib/prometheus/node-exporter ]; then
  tree="$(mktemp -d)"
  chmod 755 "$tree"
  mkdir -p "$tree/origin/id/A" "$tree/mirror"
  echo a > "$tree/origin/id/A/a.tar.gz"
  rrr init --quiet "$tree/origin"
  chown rrr:rrr "$tree/mirror"
  said="$(runuser -u rrr -- rrr --quiet rmirror --remote "$tree/origin/RECENT.recent" --localroot "$tree/mirror" \
    --prometheus /var/lib/prometheus/node-exporter/rrr-ci.prom 2>&1)" || fail "rmirror as rrr: $said"
  [ -z "$said" ] || fail "a quiet pass as rrr said: $said"
  [ -f "$tree/mirror/id/A/a.tar.gz" ] || fail "the pass as rrr mirrored nothing"
  rm -rf "$tree"
fi
RRR=/usr/bin/rrr bin/demo >/tmp/rrr-demo.log 2>&1 || { cat /tmp/rrr-demo.log; fail "bin/demo with /usr/bin/rrr"; }
grep -q "the mirror is identical to the origin" /tmp/rrr-demo.log || fail "bin/demo: $(cat /tmp/rrr-demo.log)"

# Remove it: every file it installed is gone (only config may stay).
apt_get remove -y -qq rrr >/dev/null
left=()
while IFS= read -r f; do
  f="${f%% -> *}"
  case "$f" in */) continue ;; esac
  if [ -e "$f" ] || [ -L "$f" ]; then left+=("$f"); fi
done <<<"$list"
[ ${#left[@]} -eq 0 ] || fail "left behind after apt-get remove: ${left[*]}"
apt_get purge -y -qq rrr >/dev/null
echo "package: $deb checked ($(du -k "$deb" | cut -f1) KiB; rrr $(du -k target/release/rrr | cut -f1) KiB)"
