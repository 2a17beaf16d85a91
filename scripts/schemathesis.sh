#!/usr/bin/env bash
# Fuzzes the HTTP API from its own OpenAPI document with schemathesis: a
# bounded run (DATAJUMP_SCHEMATHESIS_SECONDS, default 90; 10 examples per
# operation; seed DATAJUMP_SCHEMATHESIS_SEED, default 1, so a run can be
# replayed) that fails on any 5xx answer. The API runs alone on a fresh
# PostgreSQL database (the stricter of the two about what it stores) and its
# own nats-server, with no resolver and no runner, so the SHELL tasks the
# fuzzer creates and triggers never execute. schemathesis lives in a
# virtualenv of its own under ~/.cache/datajump-ci, never in the system
# Python (scripts/setup-services.sh).
# Called by scripts/test.sh; needs PostgreSQL (scripts/setup-services.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/setup-services.sh
venv="$(cached_venv schemathesis 4.32.5)"

cargo build -q -p datajump
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
datajump="$target_dir/debug/datajump"
nats_server=/usr/sbin/nats-server
[ -x "$nats_server" ] || nats_server="$(command -v nats-server)"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
work="$(mktemp -d)"
database="dj_schemathesis_$$"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE IF EXISTS $database" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

nats_port="$(free_port)"
"$nats_server" -a 127.0.0.1 -p "$nats_port" -js -sd "$work/nats" >"$work/nats.log" 2>&1 &
pids+=("$!")
psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE $database" >/dev/null

api_port="$(free_port)"
# An admin token from the start: the fuzzer creates named tokens through
# POST /api/v1/tokens, and the first one would otherwise close the API to
# the rest of the run.
token="dj_schemathesis_$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
DATAJUMP_API_TOKEN="$token" \
DATAJUMP_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$database" \
DATAJUMP_NATS_URL="nats://127.0.0.1:$nats_port" \
DATAJUMP_DATA_DIR="$work/data" \
DATAJUMP_LOG=warn \
  "$datajump" api --addr "127.0.0.1:$api_port" >"$work/api.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$api_port/readyz" >/dev/null && break
  sleep 0.2
done

echo "== schemathesis against $("$datajump" --version 2>/dev/null || echo datajump) on PostgreSQL"
status=0
# The Server-Sent Events routes (…/stream) answer for as long as the client
# listens, which a fuzzer's request never stops doing; tests/tests/e2e/pages.rs
# covers them.
"$venv/bin/schemathesis" run "http://127.0.0.1:$api_port/api/v1/openapi.json" \
  --checks not_a_server_error,response_schema_conformance \
  --header "Authorization: Bearer $token" \
  --max-examples 10 \
  --exclude-path-regex '/stream$' \
  --max-time "${DATAJUMP_SCHEMATHESIS_SECONDS:-90}" \
  --seed "${DATAJUMP_SCHEMATHESIS_SEED:-1}" \
  --generation-with-security-parameters false \
  --warnings off \
  --no-color || status=$?
if [ "$status" -ne 0 ]; then
  echo "== the API's log:"
  tail -n 50 "$work/api.log"
fi
exit "$status"
