#!/usr/bin/env bash
# The runner's memory while a task floods its log (issue #38, medium 9):
# starts `datajump up` (every role in one process) against its own
# nats-server and SQLite file, runs one SHELL task printing LINES lines of 41
# bytes (12,000,000: about 490 MB), and prints the process's resident memory
# before the run, at its peak (VmHWM) and 2 s after the run ended.
# Needs nats-server and curl on PATH.
#   usage: bench/log_flood_rss.sh path/to/datajump [LINES]
set -euo pipefail
bin=$1; lines=${2:-12000000}
up=; nats=
work=$(mktemp -d); trap 'kill $up $nats 2>/dev/null; sleep 1; rm -rf "$work" 2>/dev/null || true' EXIT
np=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
ap=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
nats-server -js -p $np -sd "$work/js" >/dev/null 2>&1 & nats=$!
mkdir "$work/dags"
cat > "$work/dags/loud.yaml" <<YAML
name: loud
tasks:
  - name: print
    command: yes 0123456789012345678901234567890123456789 | head -n $lines
YAML
sleep 1
"$bin" up --dags "$work/dags" --api-addr 127.0.0.1:$ap --nats-url nats://127.0.0.1:$np --data-dir "$work/data" >"$work/up.log" 2>&1 & up=$!
for i in $(seq 60); do curl -sf http://127.0.0.1:$ap/readyz >/dev/null && break; sleep 0.5; done
base=$(awk '/VmRSS/{print $2}' /proc/$up/status)
start=$(date +%s)
DATAJUMP_API_URL=http://127.0.0.1:$ap "$bin" trigger loud --wait 2>&1 | tail -3 || true
end=$(date +%s)
sleep 2
echo "lines=$lines rss_before_kb=$base peak_kb=$(awk '/VmHWM/{print $2}' /proc/$up/status) after_kb=$(awk '/VmRSS/{print $2}' /proc/$up/status) seconds=$((end-start))"
