#!/usr/bin/env bash
# Generates the web UI's API types (web/src/api/schema.d.ts) from the API's
# own OpenAPI document (`datajump openapi`, built from the Rust types), so the
# front end's client cannot drift from the server. With --check it changes
# nothing and fails when the committed file is stale (scripts/test.sh).
# Needs web/node_modules (npm --prefix web ci).
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cargo run -q -p datajump -- openapi > "$work/openapi.json"
npx --prefix web openapi-typescript "$work/openapi.json" --default-non-nullable false -o "$work/schema.d.ts" >/dev/null
target=web/src/api/schema.d.ts
if [ "${1:-}" = --check ]; then
  if ! diff -q "$target" "$work/schema.d.ts" >/dev/null 2>&1; then
    echo "web/src/api/schema.d.ts is stale: the API's types changed; run scripts/api-types.sh and commit the result" >&2
    diff -u "$target" "$work/schema.d.ts" | head -40 >&2 || true
    exit 1
  fi
  echo "web/src/api/schema.d.ts matches the API"
else
  cp "$work/schema.d.ts" "$target"
  echo "wrote $target"
fi
