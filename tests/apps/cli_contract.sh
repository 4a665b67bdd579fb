#!/usr/bin/env bash
# cli_contract.sh CHECK BUILD_DIR — ctest's cli_contract: the shared sandboxctl contract
# check (CHECK, kept beside the project as ../shared/checks/cli-contract.sh) against this
# build. Skipped (exit 77, with the reason) where it cannot run: the check is not there, not
# root, or crun cannot run sandboxes.
set -uo pipefail
check=$1 build=$2
skip() { echo "sandboxd-test: skipped cli_contract: $*"; echo "sandboxd-test: all 1 test cases skipped"; exit 77; }
[ -f "$check" ] || skip "the contract check $check is not beside this checkout"
[ "$(id -u)" = 0 ] || skip "it needs root (real crun sandboxes)"
command -v crun >/dev/null || skip "crun is not installed"
out=$(bash "$check" "$build" 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] && grep -q "cli contract: all hold" <<<"$out"
