#!/bin/sh
# Debian's PostgreSQL as the official image runs it: on an empty $PGDATA, a cluster owned by
# $POSTGRES_USER (password $POSTGRES_PASSWORD, scram-sha-256 over TCP) with the database
# $POSTGRES_DB; then the server in the foreground, listening on every address.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  password_file="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" > "$password_file"
  initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile="$password_file" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 > /dev/null
  rm -f "$password_file"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\";" \
    | postgres --single -D "$PGDATA" -j postgres > /dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/run/postgresql
