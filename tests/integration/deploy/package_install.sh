#!/usr/bin/env bash
# Installs the package into a scratch root with `dpkg --root` (maintainer scripts run outside a chroot
# with DPKG_ROOT set, so they must and do keep to it), checks what it put there, runs the installed
# daemon, reinstalls (the upgrade path), then purges and checks that nothing is left. The host's own
# group files and package database are checksummed before and after: they must not change.
# Usage: package_install.sh DEB SOURCE_DIR VERSION
set -euo pipefail
deb=$1 src=$2 version=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || fail "needs root: dpkg --root installs files owned by root and runs the maintainer scripts (run the tests as root)"
for tool in dpkg dpkg-deb groupadd groupdel; do
  command -v $tool >/dev/null || fail "$tool not found (Debian packages dpkg, passwd)"
done

control=$(dpkg-deb -f "$deb")
depends=$(dpkg-deb -f "$deb" Depends)
for dep in passwd "libc6 (>=" "libstdc++6 (>="; do
  [[ $depends == *"$dep"* ]] || fail "Depends lacks '$dep' (dpkg-shlibdeps output expected): $depends"
done
# The tcp_reconnect lever runs `nvme`: nvme-cli is recommended (issue 32).
[[ "$(dpkg-deb -f "$deb" Depends) $(dpkg-deb -f "$deb" Recommends)" == *nvme-cli* ]] ||
  fail "nvme-cli in neither Depends nor Recommends: $control"
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

scratch_dpkg -i "$deb"
for path in usr/sbin/nvme-adaptd lib/systemd/system/nvme-adaptd.service etc/nvme-adapt/config.json \
            usr/lib/tmpfiles.d/nvme-adapt.conf usr/share/doc/nvme-adapt/copyright \
            usr/share/doc/nvme-adapt/changelog.Debian.gz usr/share/man/man8/nvme-adaptd.8.gz; do
  [[ -f $root/$path ]] || fail "/$path not installed"
done
rules=$root/usr/share/nvme-adapt/prometheus
for path in "$rules/nvme-adapt-alerts.rules.yml" "$rules/nvme-adapt-recording.rules.yml" \
            "$root/usr/share/nvme-adapt/grafana/nvme-adapt.json"; do
  [[ -f $path ]] || fail "${path#"$root"} not installed"
done
# The installed rules: promtool accepts them and every alert has a runbook_url naming a section of the
# installed operations guide.
command -v promtool >/dev/null || fail "promtool not found (Debian package prometheus)"
promtool check rules "$rules"/*.yml >/dev/null || fail "promtool check rules refuses the installed rules"
python3 - "$rules/nvme-adapt-alerts.rules.yml" "$root/usr/share/doc/nvme-adapt/operations.md" <<'PY' || fail "alert runbooks"
import re, sys, yaml
sections = {"docs/operations.md#" + h.strip().lower() for h in re.findall(r"^### (.+)$", open(sys.argv[2]).read(), re.M)}
alerts = [r for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"] if "alert" in r]
bad = [a["alert"] for a in alerts if a.get("annotations", {}).get("runbook_url") not in sections]
assert alerts and not bad, f"alerts without a runbook_url to a section of operations.md: {bad}"
PY
cmp -s "$root/etc/nvme-adapt/config.json" "$src/deploy/config/config.json" || fail "installed config differs from deploy/config/config.json"
cmp -s "$root/lib/systemd/system/nvme-adaptd.service" "$src/deploy/systemd/nvme-adaptd.service" || fail "installed unit differs from deploy/systemd/nvme-adaptd.service"
group=$(grep '^nvme-adapt:' "$root/etc/group") || fail "postinst did not create group nvme-adapt in the scratch root: $(cat "$root/etc/group")"
gid=$(cut -d: -f3 <<< "$group")
((gid < 1000)) || fail "group nvme-adapt has gid $gid: not a system group"

version_line=$("$root/usr/sbin/nvme-adaptd" --version) || fail "installed nvme-adaptd --version failed"
[[ $version_line == "nvme-adaptd ${version%-*} "* ]] || fail "installed nvme-adaptd --version says '$version_line', expected version ${version%-*}"
echo "installed: $version_line; group nvme-adapt gid $gid"

# Reinstall: the upgrade path runs postinst with the group already there.
scratch_dpkg -i "$deb"
[[ $(grep -c '^nvme-adapt:' "$root/etc/group") -eq 1 ]] || fail "reinstall changed the group: $(cat "$root/etc/group")"

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
for path in var/lib/nvme-adapt run/nvme-adapt run/uvnvme etc/nvme-adapt usr/sbin/nvme-adaptd lib/systemd/system/nvme-adaptd.service; do
  [[ ! -e $root/$path ]] || fail "/$path left after purge"
done
! grep -q '^nvme-adapt:' "$root/etc/group" || fail "group nvme-adapt left after purge"
! grep -q '^nvme-adapt:' "$root/etc/gshadow" || fail "group nvme-adapt left in gshadow after purge"
status=$(dpkg --root="$root" -s nvme-adapt 2>&1 || true)
[[ $status != *"Status: install"* ]] || fail "package still recorded after purge: $status"

[[ $(md5sum "${host_files[@]}") == "$host_before" ]] || fail "the host's own files changed: ${host_files[*]}"
echo "install, reinstall and purge in a scratch root: clean; host files untouched"
