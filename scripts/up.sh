#!/usr/bin/env bash
# Brings DataJump up on this machine with embedded defaults: installs
# nats-server if it is missing, builds the web UI and the binary that embeds
# it and runs `datajump up`
# (a SQLite database in ~/.local/share/datajump, a local nats-server on 4222,
# the DAGs in ./dags, the API and the web UI on http://127.0.0.1:8080). Extra arguments go to
# `datajump up`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-services.sh
build_web_ui
cargo build --release -p datajump
exec ./target/release/datajump up "$@"
