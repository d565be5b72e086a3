#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# nvme-adaptctl's completion scripts run by bash and zsh: after `policy` they offer policy's commands, after
# `policy set` its options, after `completion` both shells. zsh's completion system is replaced by stubs
# (compadd prints what it is given, compdef records the registration), so no terminal is needed.
# Usage: ctl_completion_shells.sh NVME_ADAPTCTL
set -euo pipefail
ctl=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v zsh >/dev/null || fail "zsh not found: install Debian package 'zsh' (scripts/install-deps)"
script=$(mktemp /tmp/ctl-completion.XXXXXX)
trap 'rm -f "$script"' EXIT

# bash: COMP_WORDS as typed, the last one being completed.
bash_offers() {
  "$ctl" completion bash > "$script"
  bash -c 'source "$1"; shift; COMP_WORDS=(nvme-adaptctl "$@"); COMP_CWORD=$#; _nvme_adaptctl; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$script" "$@"
}
# zsh: sourced as `source <(nvme-adaptctl completion zsh)` would be, then called as compinit would.
zsh_offers() {
  "$ctl" completion zsh > "$script"
  zsh -f -c 'compdef() { registered=$*; }; compadd() { [[ $1 == -- ]] && shift; print -l -- "$@"; }
             source "$1"; shift
             [[ $registered == "_nvme-adaptctl nvme-adaptctl" ]] || { print -u2 "compdef not called: $registered"; exit 3; }
             words=(nvme-adaptctl "$@"); CURRENT=$(( $# + 1 )); _nvme-adaptctl' _ "$script" "$@"
}

for shell in bash zsh; do
  offers=$(${shell}_offers policy "") || fail "$shell: the completion function failed"
  for word in get set explain reset profiles; do
    grep -qx "$word" <<< "$offers" || fail "$shell offers no '$word' after 'policy': $offers"
  done
  ! grep -qx status <<< "$offers" || fail "$shell offers top-level commands after 'policy'"
  offers=$(${shell}_offers policy set --controller nvme0 "")
  grep -qx -- --pace-slack <<< "$offers" || fail "$shell offers no --pace-slack after 'policy set': $offers"
  offers=$(${shell}_offers completion "")
  grep -qx zsh <<< "$offers" && grep -qx bash <<< "$offers" || fail "$shell: completion offers $offers"
  echo "$shell: completes nvme-adaptctl's commands and options"
done

# Autoloaded from $fpath (the file's body is the function), it completes without compdef.
dir=$(mktemp -d /tmp/ctl-fpath.XXXXXX)
trap 'rm -f "$script"; rm -rf "$dir"' EXIT
"$ctl" completion zsh > "$dir/_nvme-adaptctl"
offers=$(zsh -f -c 'compdef() { print -u2 "compdef called when autoloaded"; exit 3; }
                    compadd() { [[ $1 == -- ]] && shift; print -l -- "$@"; }
                    fpath=("$1" $fpath); autoload -Uz _nvme-adaptctl
                    words=(nvme-adaptctl ""); CURRENT=2; _nvme-adaptctl' _ "$dir")
grep -qx report <<< "$offers" || fail "autoloaded zsh function offers no 'report': $offers"
echo "zsh: autoloaded from \$fpath, completes too"
