#!/usr/bin/env bash
# Restore a backup made by backup.sh into an empty database and an empty data folder.
#
#   createdb medhelm_restored
#   DATABASE_URL=postgres://.../medhelm_restored MEDHELM_DATA_DIR=/srv/medhelm-restored \
#     docs/deploy/restore.sh /backups/2026-12-06
#
# It refuses a database that already has tables and a media folder that already has files
# (nothing is overwritten), checks the backup's SHA-256 sums first, and restores the database
# in one transaction (all or nothing). Afterwards: `manage.py migrate` if the code is newer
# than the backup. Sessions and API tokens still work only under the same SECRET_KEY.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=pg-client.sh
. "$here/pg-client.sh"

src="${1:?usage: restore.sh BACKUP_FOLDER}"
: "${DATABASE_URL:?DATABASE_URL is not set (an existing, empty database)}"
: "${MEDHELM_DATA_DIR:?MEDHELM_DATA_DIR is not set}"
[ -f "$src/SHA256SUMS" ] || { echo "restore.sh: $src is not a backup (no SHA256SUMS)" >&2; exit 2; }
(cd "$src" && sha256sum --check --quiet SHA256SUMS) || {
  echo "restore.sh: $src does not match its SHA256SUMS: damaged backup, nothing restored" >&2
  exit 2
}
check_client_version "$DATABASE_URL"

tables="$("$(pg_tool psql)" --no-psqlrc -tAc \
  "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'" "$DATABASE_URL")"
if [ "$tables" != 0 ]; then
  echo "restore.sh: the database has $tables tables already: restore into an empty one" >&2
  exit 2
fi
media="$MEDHELM_DATA_DIR/media"
if [ -d "$media" ] && [ -n "$(find "$media" -type f -print -quit)" ]; then
  echo "restore.sh: $media has files already: restore into an empty data folder" >&2
  exit 2
fi

"$(pg_tool pg_restore)" --no-owner --no-privileges --exit-on-error --single-transaction \
  --dbname "$DATABASE_URL" "$src/database.dump"
mkdir -p "$MEDHELM_DATA_DIR"
tar -C "$MEDHELM_DATA_DIR" -xzf "$src/media.tar.gz"
echo "restored $src: database $("$(pg_tool psql)" --no-psqlrc -tAc \
  "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'" "$DATABASE_URL") tables," \
  "$(find "$media" -type f | wc -l) uploaded files"
