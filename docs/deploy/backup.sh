#!/usr/bin/env bash
# Back up a medhelm-studio installation into a new folder: the database (pg_dump's custom
# format, restorable with pg_restore into any database) and the uploaded files (MEDIA_ROOT,
# which is $MEDHELM_DATA_DIR/media), with their SHA-256 sums and the versions used.
#
#   DATABASE_URL=postgres://... MEDHELM_DATA_DIR=/srv/medhelm docs/deploy/backup.sh /backups/2026-12-06
#
# The dump is one consistent snapshot taken while the site runs. The files are copied after
# it: an upload made in between is in the copy but no row names it (harmless); an import
# still waiting for a worker may have no file after a restore (its job then fails, saying
# so). Stop the web and the workers first for a backup with neither.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=pg-client.sh
. "$here/pg-client.sh"

dest="${1:?usage: backup.sh DESTINATION_FOLDER (created; must not exist yet)}"
: "${DATABASE_URL:?DATABASE_URL is not set}"
: "${MEDHELM_DATA_DIR:?MEDHELM_DATA_DIR is not set (the uploaded files are in its media folder)}"
[ ! -e "$dest" ] || { echo "backup.sh: $dest exists already: name a new folder" >&2; exit 2; }
check_client_version "$DATABASE_URL"

mkdir -p "$dest.partial"
"$(pg_tool pg_dump)" --format=custom --no-owner --no-privileges \
  --file "$dest.partial/database.dump" "$DATABASE_URL"
media="$MEDHELM_DATA_DIR/media"
mkdir -p "$media"
tar -C "$MEDHELM_DATA_DIR" -czf "$dest.partial/media.tar.gz" media
{
  echo "created_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "pg_dump=$("$(pg_tool pg_dump)" --version)"
  echo "media_files=$(find "$media" -type f | wc -l)"
} >"$dest.partial/MANIFEST"
(cd "$dest.partial" && sha256sum database.dump media.tar.gz MANIFEST >SHA256SUMS)
mv "$dest.partial" "$dest" # the folder exists only once complete
echo "backup written to $dest:"
ls -l "$dest"
