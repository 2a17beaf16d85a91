#!/usr/bin/env bash
# Runs every check and test DataJump has: formatting, clippy, the unit tests,
# and the end-to-end suite against real nats-server and real SQLite and
# PostgreSQL databases — once with Debian's nats-server 2.9.10 (the oldest we
# support) and once with the current server from PyPI — and a bounded
# schemathesis run against the API (scripts/schemathesis.sh), the Kubernetes
# manifests against their schemas (scripts/check-deploy.sh), and the web UI's
# lint, unit tests and browser tests (web/). Exits non-zero
# if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's heading says when it started (minutes:seconds since this
# script did), so a slow CI run shows where its time went.
SECONDS=0
step() { printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
export DATAJUMP_NEED_POSTGRES=1 DATAJUMP_NEED_MARIADB=1 DATAJUMP_NEED_CURRENT_NATS=1 DATAJUMP_NEED_NEXTEST=1 DATAJUMP_NEED_BROWSER=1 DATAJUMP_NEED_PROMETHEUS=1 DATAJUMP_NEED_BIGDATA=1
source scripts/setup-services.sh

# The front end first: the binary the tests build embeds web/dist.
step "web UI: lint, unit tests, build"
build_web_ui
npm --prefix web run --silent lint
npm --prefix web test --silent

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
step "the web UI's API types match the API (scripts/api-types.sh)"
bash scripts/api-types.sh --check

target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
# keep_report NAME: keeps the JUnit report of the nextest run just ended
# (.config/nextest.toml, profile ci) as NAME.xml and prints its ten
# slowest tests, so a slow CI run shows which tests its time went to.
keep_report() {
  local report="$target_dir/nextest/ci/$1.xml"
  mv "$target_dir/nextest/ci/junit.xml" "$report"
  python3 - "$report" <<'EOF'
import sys
import xml.etree.ElementTree as ET
cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
timed = sorted(((float(c.get("time", 0)), f"{c.get('classname', '')} {c.get('name', '')}") for c in cases), reverse=True)
print(f"slowest of {len(timed)} tests ({sum(t for t, _ in timed):.0f} s in all; report {sys.argv[1]}):")
for seconds, name in timed[:10]:
    print(f"  {seconds:7.1f} s  {name}")
EOF
}

# Every transition the engine applies in either run is logged here, and
# transition-coverage checks the log against the engine's table at the end.
transitions="$PWD/target/transition-coverage.log"
mkdir -p target && : > "$transitions"
export DATAJUMP_TRANSITION_LOG="$transitions"

oldest=/usr/sbin/nats-server
[ -x "$oldest" ] || oldest="$(command -v nats-server)"
step "tests with $("$oldest" --version)"
# The cluster tests (cluster::) run below on the current server only: 2.9's
# replicated streams have known recovery bugs (docs/ARCHITECTURE.md "Testing").
DATAJUMP_TEST_NATS_SERVER="$oldest" cargo nextest run --profile ci --workspace -E 'not test(/^cluster::/)'
keep_report nats-oldest

step "end-to-end tests with $("$DATAJUMP_CURRENT_NATS_SERVER" --version)"
# This second pass is about the server: it runs the tests whose outcome
# rests on JetStream's behaviour (streams, consumers, acks, duplicate
# windows, key-value and object stores, core subscriptions, clustering)
# and the cluster tests, which 2.9 is not run with; on SQLite alone, as
# the server does not see which database the roles use and the first pass
# ran both. The API's, the CLI's
# and the security boundaries' own tests, the fault tests, the dashboard
# and the Spark and Flink jobs ran above and take the same NATS paths as
# the tests here (docs/ARCHITECTURE.md "Testing").
DATAJUMP_TEST_NATS_SERVER="$DATAJUMP_CURRENT_NATS_SERVER" cargo nextest run --profile ci -p datajump-tests \
  -E 'test(/^(cluster|topology|nats_auth|nats_roles|message_ids|forged_messages|idempotence|reliability|engine|joins|control|rerun|timeouts|schedule|sensors|datasets|dependencies|logs|pages|metrics)::/) and not test(/::postgres$/)'
keep_report nats-current
step "the API fuzzed from its OpenAPI document (scripts/schemathesis.sh)"
bash scripts/schemathesis.sh
step "Kubernetes manifests against the Kubernetes and KEDA schemas (scripts/check-deploy.sh)"
bash scripts/check-deploy.sh
step "web UI in a real browser (Playwright, Debian's chromium, against datajump up)"
DATAJUMP_BIN="$target_dir/debug/datajump" DATAJUMP_TEST_NATS_SERVER="$oldest" npm --prefix web run --silent e2e
step "transition coverage (engine/src/transitions.rs)"
cargo run -q -p datajump-tests --bin transition-coverage -- "$transitions"
step "all tests passed"
