#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the packages into a scratch root with `dpkg --root` (maintainer scripts, debhelper's and the
# postrm's purge, run outside a chroot with DPKG_ROOT set, so they must and do keep to it), checks what they
# put there, runs the installed daemon, reinstalls (the upgrade path), then purges and checks that nothing
# is left but the system group, which Debian's policy keeps. The host's own group files, package database
# and systemd state are checksummed before and after: they must not change.
# Usage: package_install.sh PACKAGE_DIR SOURCE_DIR VERSION
set -euo pipefail
dir=$1 src=$2 version=$3
arch=$(dpkg --print-architecture)
deb=$dir/nvme-adapt_${version}_${arch}.deb
tools=$dir/nvme-adapt-tools_${version}_${arch}.deb
fail() { echo "FAIL: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || fail "needs root: dpkg --root installs files owned by root and runs the maintainer scripts (run the tests as root)"
for tool in dpkg dpkg-deb systemd-sysusers systemd-tmpfiles deb-systemd-helper; do
  command -v $tool >/dev/null || fail "$tool not found (Debian packages dpkg, systemd, init-system-helpers)"
done

control=$(dpkg-deb -f "$deb")
depends=$(dpkg-deb -f "$deb" Depends)
# The sysusers.d entry needs systemd-sysusers; the libraries come from dpkg-shlibdeps.
for dep in "systemd-standalone-sysusers | systemd" "libc6 (>=" "libstdc++6 (>=" "libnvme1 (>="; do
  [[ $depends == *"$dep"* ]] || fail "Depends lacks '$dep': $depends"
done
[[ $depends != *nvme-cli* && "$(dpkg-deb -f "$deb" Recommends)" != *nvme-cli* ]] ||
  fail "nvme-cli is still asked for: the reconnect lever connects through libnvme"
[[ $(dpkg-deb -f "$deb" Package) == nvme-adapt ]] || fail "Package field: $control"
[[ $(dpkg-deb -f "$deb" Version) == "$version" ]] || fail "Version is $(dpkg-deb -f "$deb" Version), expected $version"
ctrl=$(mktemp -d /tmp/nvme-adapt-ctrl.XXXXXX)
root=$(mktemp -d /tmp/nvme-adapt-root.XXXXXX)
trap 'rm -rf "$ctrl" "$root"' EXIT
dpkg-deb -e "$deb" "$ctrl"
grep -qx /etc/nvme-adapt/config.json "$ctrl/conffiles" || fail "/etc/nvme-adapt/config.json is not a conffile: $(cat "$ctrl/conffiles")"
for script in postinst prerm postrm; do
  [[ -x $ctrl/$script ]] || fail "maintainer script $script missing or not executable"
done

host_files=(/etc/passwd /etc/group /etc/gshadow /var/lib/dpkg/status)
[[ -d /etc/systemd/system ]] && host_files+=($(find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled -xtype l -o -type f 2>/dev/null | sort))
[[ -f /var/log/dpkg.log ]] && host_files+=(/var/log/dpkg.log)
host_before=$(md5sum "${host_files[@]}")

# A root with an empty package database and the minimal account files groupadd --prefix edits.
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/log" "$root/etc"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"
echo 'root:x:0:' > "$root/etc/group"
echo 'root:*::' > "$root/etc/gshadow"
echo 'root:*:19000:0:99999:7:::' > "$root/etc/shadow"
scratch_dpkg() {
  # --force-depends: the scratch database has none of the runtime libraries; the host provides them.
  dpkg --root="$root" --log="$root/var/log/dpkg.log" --force-script-chrootless --force-depends "$@" \
    > "$root/dpkg.out" 2>&1 || { cat "$root/dpkg.out" >&2; fail "dpkg $* failed"; }
}

scratch_dpkg -i "$deb" "$tools"
for path in usr/sbin/nvme-adaptd lib/systemd/system/nvme-adaptd.service etc/nvme-adapt/config.json \
            usr/lib/tmpfiles.d/nvme-adapt.conf usr/lib/sysusers.d/nvme-adapt.conf usr/share/doc/nvme-adapt/copyright \
            usr/bin/uvnvme-load usr/share/doc/nvme-adapt-tools/copyright \
            usr/share/doc/nvme-adapt/changelog.Debian.gz usr/share/man/man8/nvme-adaptd.8.gz; do
  [[ -f $root/$path ]] || fail "/$path not installed"
done
rules=$root/usr/share/nvme-adapt/prometheus
for path in "$rules/nvme-adapt-alerts.rules.yml" "$rules/nvme-adapt-recording.rules.yml" \
            "$root/usr/share/nvme-adapt/grafana/nvme-adapt.json"; do
  [[ -f $path ]] || fail "${path#"$root"} not installed"
done
# The installed rules: promtool accepts them and every alert has an absolute runbook_url naming a section of
# the installed operations guide.
command -v promtool >/dev/null || fail "promtool not found (Debian package prometheus)"
promtool check rules "$rules"/*.yml >/dev/null || fail "promtool check rules refuses the installed rules"
# dh_compress gzips the larger docs.
guide=$(ls "$root"/usr/share/doc/nvme-adapt/operations.md* 2>/dev/null | head -1)
[[ -n $guide ]] || fail "/usr/share/doc/nvme-adapt/operations.md not installed"
python3 - "$rules/nvme-adapt-alerts.rules.yml" "$guide" <<'PY' || fail "alert runbooks"
import gzip, re, sys, yaml
guide = (gzip.open if sys.argv[2].endswith(".gz") else open)(sys.argv[2], "rt").read()
sections = {h.strip().lower() for h in re.findall(r"^### (.+)$", guide, re.M)}
alerts = [r for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"] if "alert" in r]
urls = {a["alert"]: a.get("annotations", {}).get("runbook_url", "") for a in alerts}
bad = [f"{name}: {url}" for name, url in urls.items()
       if not url.startswith(("https://", "http://")) or url.partition("#")[2] not in sections]
assert alerts and not bad, f"alerts without an absolute runbook_url to a section of operations.md: {bad}"
PY
cmp -s "$root/etc/nvme-adapt/config.json" "$src/deploy/config/config.json" || fail "installed config differs from deploy/config/config.json"
cmp -s "$root/lib/systemd/system/nvme-adaptd.service" "$src/deploy/systemd/nvme-adaptd.service" || fail "installed unit differs from deploy/systemd/nvme-adaptd.service"
group=$(grep '^nvme-adapt:' "$root/etc/group") || fail "systemd-sysusers did not create group nvme-adapt in the scratch root: $(cat "$root/etc/group")"
[[ $(stat -c %G "$root/run/uvnvme" 2>/dev/null) == nvme-adapt || $(stat -c %g "$root/run/uvnvme") == "$(cut -d: -f3 <<< "$group")" ]] ||
  fail "/run/uvnvme was not made by systemd-tmpfiles with group nvme-adapt"
[[ -L $root/etc/systemd/system/multi-user.target.wants/nvme-adaptd.service ]] ||
  fail "nvme-adaptd.service not enabled in the scratch root (dh_installsystemd's postinst)"
gid=$(cut -d: -f3 <<< "$group")
((gid < 1000)) || fail "group nvme-adapt has gid $gid: not a system group"

version_line=$("$root/usr/sbin/nvme-adaptd" --version) || fail "installed nvme-adaptd --version failed"
[[ $version_line == "nvme-adaptd ${version%-*} "* ]] || fail "installed nvme-adaptd --version says '$version_line', expected version ${version%-*}"
echo "installed: $version_line; group nvme-adapt gid $gid"

# Reinstall: the upgrade path runs postinst with the group already there.
scratch_dpkg -i "$deb"
[[ $(grep -c '^nvme-adapt:' "$root/etc/group") -eq 1 ]] || fail "reinstall changed the group: $(cat "$root/etc/group")"
scratch_dpkg --purge nvme-adapt-tools

# A journal that still lists changed settings survives a purge: it is the only record of their safe values.
mkdir -p "$root/var/lib/nvme-adapt"
echo '{"entries": [{"controller": "nvme0", "lever": "gsim", "target": "nvme0 q1", "safe_value": "{}"}]}' \
  > "$root/var/lib/nvme-adapt/journal.json"
scratch_dpkg --purge nvme-adapt
[[ -s $root/var/lib/nvme-adapt/journal.json ]] || fail "purge deleted a journal with entries"
grep -q 'still lists changed device settings' "$root/dpkg.out" || fail "purge kept the journal without saying so: $(cat "$root/dpkg.out")"
scratch_dpkg -i "$deb"

# What the running daemon leaves behind (its journal empty), then purge.
mkdir -p "$root/var/lib/nvme-adapt" "$root/run/nvme-adapt" "$root/run/uvnvme"
echo '{}' > "$root/var/lib/nvme-adapt/journal.json"
echo '{}' > "$root/var/lib/nvme-adapt/policy.json"
: > "$root/run/nvme-adapt/agent.sock"
scratch_dpkg --purge nvme-adapt
for path in var/lib/nvme-adapt run/nvme-adapt run/uvnvme etc/nvme-adapt usr/sbin/nvme-adaptd lib/systemd/system/nvme-adaptd.service \
            etc/systemd/system/multi-user.target.wants/nvme-adaptd.service; do
  [[ ! -e $root/$path && ! -L $root/$path ]] || fail "/$path left after purge"
done
# Debian's policy: a system group stays (files may still belong to it); groupdel is the administrator's.
grep -q '^nvme-adapt:' "$root/etc/group" || fail "purge deleted the system group nvme-adapt"
status=$(dpkg --root="$root" -s nvme-adapt 2>&1 || true)
[[ $status != *"Status: install"* ]] || fail "package still recorded after purge: $status"

[[ $(md5sum "${host_files[@]}") == "$host_before" ]] || fail "the host's own files changed: ${host_files[*]}"
echo "install, reinstall and purge in a scratch root: clean but for the system group; host files untouched"
