# Sourced by backup.sh and restore.sh: the PostgreSQL client tools to use, and a check that
# they are not older than the server (pg_dump refuses a newer server; pg_restore cannot read
# a dump written by a newer pg_dump). PG_BIN names a folder of other client tools, for
# example /usr/lib/postgresql/16/bin when the server is 16 and the default tools are 15.

pg_tool() { # pg_tool NAME: the path of a client tool, from PG_BIN when set
  local tool="${PG_BIN:+$PG_BIN/}$1"
  command -v "$tool" >/dev/null || {
    echo "$(basename "$0"): $tool not found (install postgresql-client, or set PG_BIN)" >&2
    exit 2
  }
  echo "$tool"
}

check_client_version() { # check_client_version DATABASE_URL: exit 2 if the client is older
  local server client
  server="$("$(pg_tool psql)" --no-psqlrc -tAc 'SHOW server_version_num' "$1")" || {
    echo "$(basename "$0"): cannot connect to the database named by DATABASE_URL" >&2
    exit 2
  }
  server=$((server / 10000))
  client="$("$(pg_tool pg_dump)" --version | sed -E 's/.* ([0-9]+)(\.[0-9]+)*.*/\1/')"
  if [ "$client" -lt "$server" ]; then
    echo "$(basename "$0"): the PostgreSQL client tools are version $client and the server is" \
      "$server: install the version $server client (postgresql-client-$server) and set" \
      "PG_BIN=/usr/lib/postgresql/$server/bin" >&2
    exit 2
  fi
  echo "PostgreSQL server $server, client tools $client"
}
