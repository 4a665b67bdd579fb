#!/usr/bin/env bash
# run_pytest.sh SOURCE_DIR BUILD_DIR SANDBOXD_BIN — ctest's sdk_python: the SDK's virtual
# environment (made or brought up to date by scripts/python-env), then its pytest suite.
# Exit 77 (skipped) when the environment cannot be made, or when every test was skipped.
set -uo pipefail
src=$1 build=$2 bin=$3
if ! out=$("$src/scripts/python-env" "$build" 2>&1); then
  echo "$out"
  echo "sandboxd-test: skipped sdk_python: the SDK's Python environment cannot be made (scripts/python-env above)"
  echo "sandboxd-test: all 1 test cases skipped"
  exit 77
fi
# From the build directory, so the sources in sdk/python never shadow the installed package.
cd "$build" || exit 1
SANDBOXD_BIN=$bin exec "$build/venv/bin/pytest" -p no:cacheprovider -q -rfE "$src/sdk/python/tests"
