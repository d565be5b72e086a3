#!/usr/bin/env bash
# scripts/check-spdx on a made-up git tree: it lists exactly the tracked sources without an SPDX line (not
# untracked files, not other suffixes, not the data folders) and exits 1; 0 once they have one; 2 outside git.
# Usage: spdx_check_test.sh CHECK_SPDX
set -euo pipefail
check=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
tree=$(mktemp -d /tmp/spdx-check.XXXXXX)
trap 'rm -rf "$tree"' EXIT

rc=0; "$check" "$tree" >/dev/null 2>&1 || rc=$?
((rc == 2)) || fail "outside a git checkout: exit $rc, expected 2"

git -C "$tree" init -q
mkdir -p "$tree/agent" "$tree/bpf" "$tree/tests/data/x" "$tree/tests/fuzz/corpus"
printf '// SPDX-License-Identifier: Apache-2.0\nint a;\n' > "$tree/agent/good.cc"
printf 'int b;\n' > "$tree/agent/bad.cc"
printf '# SPDX-License-Identifier: Apache-2.0\n' > "$tree/tools.py"
printf 'echo\n' > "$tree/run.sh"
printf '/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */\n' > "$tree/bpf/prog.bpf.c"
printf 'syntax = "proto3";\n' > "$tree/api.proto"
printf 'no licence\n' > "$tree/notes.txt"
printf 'int data;\n' > "$tree/tests/data/x/fixture.h"
printf 'seed\n' > "$tree/tests/fuzz/corpus/seed.c"
git -C "$tree" add .
printf 'int untracked;\n' > "$tree/agent/untracked.cc"

rc=0; listed=$("$check" "$tree" 2>/dev/null) || rc=$?
((rc == 1)) || fail "exit $rc with sources lacking SPDX, expected 1"
expected=$'agent/bad.cc\napi.proto\nrun.sh'
[[ $listed == "$expected" ]] || fail "listed '$listed', expected '$expected'"

for f in agent/bad.cc api.proto run.sh; do
  sed -i '1i # SPDX-License-Identifier: Apache-2.0' "$tree/$f"
done
rc=0; "$check" "$tree" >/dev/null 2>&1 || rc=$?
((rc == 0)) || fail "exit $rc with every source licensed, expected 0"
echo "check-spdx lists the unlicensed tracked sources only, and passes a licensed tree"
