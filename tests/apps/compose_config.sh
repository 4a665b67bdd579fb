#!/usr/bin/env bash
# compose_config.sh COMPOSE_FILE — compose.yaml is a valid Compose file (types, keys,
# depends_on targets, interpolation), checked by docker-compose without a Docker engine; and
# it refuses to render without the PostgreSQL password it requires. Exit 77 (skipped) when
# docker-compose is not installed.
set -euo pipefail
file=$1
if ! command -v docker-compose >/dev/null; then
  echo "sandboxd-test: skipped compose_config: docker-compose is not installed (scripts/setup installs it)"
  exit 77
fi
SANDBOXD_PG_PASSWORD=test docker-compose -f "$file" config -q
echo "compose_config: $file is valid"
services=$(SANDBOXD_PG_PASSWORD=test docker-compose -f "$file" config --services | sort | tr '\n' ' ')
[[ "$services" == "kafka postgres sandboxd " ]] || {
  echo "compose_config: services are '$services', expected kafka, postgres, sandboxd" >&2
  exit 1
}
if env -u SANDBOXD_PG_PASSWORD docker-compose -f "$file" config -q 2>/dev/null; then
  echo "compose_config: $file renders without SANDBOXD_PG_PASSWORD; it must require it" >&2
  exit 1
fi
echo "compose_config: services $services; SANDBOXD_PG_PASSWORD required"
