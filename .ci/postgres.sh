# Sourced by .ci/run (and usable by hand: `source .ci/postgres.sh; start_postgres`).
# Starts a throw-away PostgreSQL cluster in a temp dir as an unprivileged user and exports
# HERMES_TEST_PG_URL for the tests; stop_postgres stops it and removes the dir.

start_postgres() {
  local bin
  bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  if [ -z "$bin" ]; then echo "PostgreSQL binaries not found under /usr/lib/postgresql/*/bin" >&2; return 1; fi
  PG_DIR="$(mktemp -d /tmp/hermes-pg.XXXXXX)"
  local run_as=()
  if [ "$(id -u)" = 0 ]; then
    id -u hermespg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin hermespg
    chown hermespg "$PG_DIR"
    run_as=(runuser -u hermespg --)
  fi
  PG_PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
  "${run_as[@]}" "$bin/initdb" -D "$PG_DIR/data" -U hermes --auth=trust -E UTF8 >/dev/null
  "${run_as[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w -t 60 \
    -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
  "${run_as[@]}" "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U hermes hermes_test
  PG_BIN="$bin"
  PG_RUN_AS="${run_as[*]}"
  export HERMES_TEST_PG_URL="postgres://hermes@127.0.0.1:$PG_PORT/hermes_test"
  echo "PostgreSQL running for the tests at $HERMES_TEST_PG_URL"
}

stop_postgres() {
  [ -n "${PG_DIR:-}" ] || return 0
  $PG_RUN_AS "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
  PG_DIR=
}
