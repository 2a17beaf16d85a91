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
# Clippy's lints ride along with the one build of everything: clippy-driver
# compiles DataJump's own crates (what `cargo clippy` does, but to the end,
# not only checking), so the dependencies are compiled once, not once
# checked for clippy and again built for the tests. Every cargo command
# below runs with the same two variables, so none compiles anything again.
step "build every crate and test, with clippy's lints as errors"
RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER RUSTFLAGS="-D warnings"
cargo build --workspace --all-targets
step "the web UI's API types match the API (scripts/api-types.sh)"
bash scripts/api-types.sh --check

target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
# keep_report PROFILE NAME: keeps the JUnit report of the nextest run of
# PROFILE just ended (.config/nextest.toml) as NAME.xml and prints its ten
# slowest tests, so a slow CI run shows which tests its time went to.
keep_report() {
  local report="$target_dir/nextest/$1/$2.xml"
  mv "$target_dir/nextest/$1/junit.xml" "$report"
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
keep_report ci nats-oldest

current="$DATAJUMP_CURRENT_NATS_SERVER"
step "cluster tests with $("$current" --version), in the background"
# Three-node clusters losing nodes (cluster::), one at a time: about five
# minutes, spent mostly waiting on elections and redeliveries, so they run
# beside everything below rather than after it. Their report comes at the
# end; a failure of a step in between stops them.
cluster_log="$target_dir/nextest/cluster.log"
mkdir -p "$(dirname "$cluster_log")"
DATAJUMP_TEST_NATS_SERVER="$current" cargo nextest run --profile ci-cluster -p datajump-tests \
  -E 'test(/^cluster::/)' >"$cluster_log" 2>&1 &
cluster_pid=$!
trap 'kill "$cluster_pid" 2>/dev/null || true' EXIT

step "end-to-end tests with $("$current" --version)"
# This second pass is about the server: it runs the tests whose outcome
# rests on JetStream's behaviour (streams, consumers, acks, duplicate
# windows, key-value and object stores, core subscriptions), on SQLite
# alone, as the server does not see which database the roles use and the
# first pass ran both; two at a time, beside the cluster tests. The API's,
# the CLI's and the security boundaries' own tests, the fault tests, the
# dashboard and the Spark and Flink jobs ran above and take the same NATS
# paths as the tests here (docs/ARCHITECTURE.md "Testing").
DATAJUMP_TEST_NATS_SERVER="$current" cargo nextest run --profile ci --test-threads 2 -p datajump-tests \
  -E 'test(/^(topology|nats_auth|nats_roles|message_ids|forged_messages|idempotence|reliability|engine|joins|control|rerun|timeouts|schedule|sensors|datasets|dependencies|logs|pages|metrics)::/) and not test(/::postgres$/)'
keep_report ci nats-current
step "the API fuzzed from its OpenAPI document (scripts/schemathesis.sh)"
bash scripts/schemathesis.sh
step "Kubernetes manifests against the Kubernetes and KEDA schemas (scripts/check-deploy.sh)"
bash scripts/check-deploy.sh
step "web UI in a real browser (Playwright, Debian's chromium, against datajump up)"
DATAJUMP_BIN="$target_dir/debug/datajump" DATAJUMP_TEST_NATS_SERVER="$oldest" npm --prefix web run --silent e2e
step "the cluster tests, started before the second pass"
cluster_status=0
wait "$cluster_pid" || cluster_status=$?
trap - EXIT
cat "$cluster_log"
keep_report ci-cluster cluster
[ "$cluster_status" = 0 ] || exit "$cluster_status"
step "transition coverage (engine/src/transitions.rs)"
cargo run -q -p datajump-tests --bin transition-coverage -- "$transitions"
step "all tests passed"
