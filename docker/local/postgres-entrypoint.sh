#!/bin/sh
# Entrypoint of docker/local/postgres.Dockerfile: the official image's first-start contract,
# reduced to what the CTA stack needs (a password-protected user and one database).
set -eu
for bin in /usr/lib/postgresql/*/bin; do :; done  # the one version installed

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /run/postgresql
  chown -R postgres:postgres "$PGDATA" /run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  "$bin/initdb" --pgdata="$PGDATA" --username="$user" --pwfile="$pwfile" \
    --encoding=UTF8 --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\" OWNER \"$user\";" \
      | "$bin/postgres" --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "postgres-entrypoint: initialised $PGDATA (user $user, database $db)"
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' "$@"
