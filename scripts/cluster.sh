#!/usr/bin/env bash
# Runs DataJump as it would run in production, on one machine: a three-node
# NATS JetStream cluster on loopback (nats/config/cluster/), PostgreSQL, two
# tickers, two resolvers, two APIs and four runners, each its own process.
# Every stream is created with three copies, so any one NATS node can be
# killed (kill -9, or Ctrl-Z in its terminal) while runs go on.
#
#   bash scripts/cluster.sh            # builds, starts everything, waits; Ctrl-C stops it all
#
# Settings (environment):
#   DATAJUMP_CLUSTER_PORT_OFFSET  added to every NATS port of nats/config/cluster/
#                                 (default 10000: clients on 14222-14224, routes on
#                                 16222-16224, monitoring on 18222-18224), so a NATS
#                                 already on 4222 is left alone
#   DATAJUMP_CLUSTER_DATABASE     PostgreSQL database to use (default datajump_cluster,
#                                 created on 127.0.0.1:5432 when missing)
#   DATAJUMP_CLUSTER_DIR          where node stores and every process's log go
#                                 (default target/cluster)
# The APIs serve http://127.0.0.1:8080/ and :8081 (the web UI on both).
set -euo pipefail
cd "$(dirname "$0")/.."
export DATAJUMP_NEED_POSTGRES=1
source scripts/setup-services.sh
build_web_ui
cargo build --release -p datajump
datajump="$PWD/target/release/datajump"

offset="${DATAJUMP_CLUSTER_PORT_OFFSET:-10000}"
database="${DATAJUMP_CLUSTER_DATABASE:-datajump_cluster}"
dir="$(realpath -m "${DATAJUMP_CLUSTER_DIR:-target/cluster}")"
mkdir -p "$dir"

pids=()
stop() {
  trap - INT TERM EXIT
  echo "== stopping"
  # Roles first (they drain), then the NATS nodes.
  for pid in "${pids[@]:6}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait "${pids[@]:6}" 2>/dev/null || true
  for pid in "${pids[@]:0:3}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT

# The shipped node files with their ports moved and their stores in $dir.
urls=()
for node in a b c; do
  conf="$dir/node-$node.conf"
  python3 - "$offset" "$dir" nats/config/cluster/node-$node.conf "$conf" <<'EOF'
import re, sys
offset, store, source, target = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
text = open(source).read()
text = re.sub(r"127\.0\.0\.1:(\d+)", lambda m: f"127.0.0.1:{int(m.group(1)) + offset}", text)
text = re.sub(r'store_dir: "\./\.datajump/', f'store_dir: "{store}/', text)
open(target, "w").write(text)
EOF
  port="$(sed -n 's/^listen: 127.0.0.1:\([0-9]*\).*/\1/p' "$conf")"
  urls+=("nats://127.0.0.1:$port")
  nats-server -c "$conf" > "$dir/nats-$node.log" 2>&1 &
  pids+=($!)
done
nats_url="$(IFS=,; echo "${urls[*]}")"
echo "== NATS cluster: $nats_url (logs in $dir)"
# Every node up (not another process on its ports) and healthy, with a
# JetStream meta leader, before any role starts.
for i in 0 1 2; do
  monitor="$(sed -n 's/^http: 127.0.0.1:\([0-9]*\).*/\1/p' "$dir/node-$(echo a b c | cut -d' ' -f$((i + 1))).conf")"
  for attempt in $(seq 1 150); do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      echo "a NATS node did not start; its log:" >&2
      tail -5 "$dir/nats-$(echo a b c | cut -d' ' -f$((i + 1))).log" >&2
      exit 1
    fi
    if curl -fsS "http://127.0.0.1:$monitor/healthz" >/dev/null 2>&1 \
      && curl -fsS "http://127.0.0.1:$monitor/jsz" | grep -q '"leader"'; then
      break
    fi
    [ "$attempt" = 150 ] && { echo "NATS node on $monitor not healthy after 30 s" >&2; exit 1; }
    sleep 0.2
  done
done

if ! psql -h 127.0.0.1 -U postgres -tAc "select 1 from pg_database where datname = '$database'" postgres | grep -q 1; then
  psql -h 127.0.0.1 -U postgres -qc "create database $database" postgres
fi
export DATAJUMP_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$database"
export DATAJUMP_NATS_URL="$nats_url"
export DATAJUMP_DATA_DIR="$dir/data"

"$datajump" migrate
"$datajump" topology apply

role() {
  local name="$1"; shift
  "$datajump" "$@" > "$dir/$name.log" 2>&1 &
  pids+=($!)
  echo "   $name (pid $!): datajump $*"
}
# Placeholders keep the NATS pids at 0-2 and the roles from 6 on.
pids+=(0 0 0)
echo "== roles (logs in $dir)"
role ticker-1 ticker
role ticker-2 ticker
role resolver-1 resolver
role resolver-2 resolver
role api-1 api --addr 127.0.0.1:8080
role api-2 api --addr 127.0.0.1:8081
for n in 1 2 3 4; do role "runner-$n" runner --slots 8; done
for _ in $(seq 1 150); do
  curl -fsS http://127.0.0.1:8080/readyz >/dev/null 2>&1 && break
  sleep 0.2
done
"$datajump" --api http://127.0.0.1:8080 dag apply -f dags
echo "== up: web UI and API on http://127.0.0.1:8080/ and http://127.0.0.1:8081/; Ctrl-C stops everything"
echo "   try: $datajump --api http://127.0.0.1:8080 trigger example_diamond --wait"
echo "   lose a node: kill -9 ${pids[0]}   (node a; b is ${pids[1]}, c is ${pids[2]})"
wait
