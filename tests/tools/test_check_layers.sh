#!/usr/bin/env bash
# test_check_layers — scripts/check-layers passes on the tree as it is and fails, naming
# the file, on a copy of it with one wrong-way include planted in each of four folders.
set -euo pipefail
src=${SANDBOXD_SOURCE_DIR:?}
check=$src/scripts/check-layers
work=$(mktemp -d /tmp/sandboxd-test-layers-XXXXXX)
trap 'rm -rf "$work"' EXIT

fail() { echo "test_check_layers: $*" >&2; exit 1; }

"$check" "$src" >/dev/null || fail "the tree itself does not pass"

# One copy of the layered folders; each plant is added to it, checked and taken out again.
mkdir -p "$work/tree"
for d in base schemas events runtime network actors projections replay node api cli; do
  [[ -d "$src/$d" ]] && cp -r "$src/$d" "$work/tree/"
done

plant() { # folder file-name include
  mkdir -p "$work/tree/$1"
  printf '#pragma once\n#include "%s"\n' "$3" >"$work/tree/$1/$2"
  if out=$("$check" "$work/tree" 2>&1); then
    fail "a wrong-way include $1/$2 -> $3 passed"
  fi
  grep -q "$1/$2:2 includes" <<<"$out" || fail "the failure does not name $1/$2: $out"
  rm "$work/tree/$1/$2"
}

plant runtime planted.hpp "actors/control_plane.hpp"
plant events planted.hpp "projections/projector.hpp"
plant base planted.hpp "events/event.hpp"
plant cli planted.hpp "node/node.hpp"
"$check" "$work/tree" >/dev/null || fail "an unchanged copy does not pass"
echo "test_check_layers: wrong-way includes fail, the tree passes"
