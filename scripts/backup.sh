#!/usr/bin/env bash
# Back up Sprig: the PostgreSQL database (pg_dump, custom format) and the export folder (tar).
#
#   scripts/backup.sh DEST
#
# Reads SPRIG_DATABASE_URL (the app's SQLAlchemy URL, postgresql+psycopg://…) and
# SPRIG_EXPORT_DIR (default var/exports), the same variables the app reads. Writes into DEST
# (created; must be absent or empty):
#   sprig.dump    pg_dump -Fc of the whole database (one consistent snapshot)
#   exports.tar   the export folder, paths relative to it
#   SHA256SUMS    checksums of both, checked by scripts/restore.sh
# pg_dump comes from SPRIG_PG_BIN if set, else PATH; it must be the server's major version or
# newer. Runs while the app serves: nothing is locked beyond what pg_dump's snapshot needs.
set -euo pipefail

die() {
    printf 'backup: %s\n' "$*" >&2
    exit 1
}

[[ $# -eq 1 ]] || {
    echo "usage: $0 DEST" >&2
    exit 2
}
dest=$1
url=${SPRIG_DATABASE_URL:-}
[[ $url == postgresql* ]] || die "SPRIG_DATABASE_URL must be a PostgreSQL URL (got '${url%%:*}')"
# libpq does not know SQLAlchemy's driver suffix (postgresql+psycopg://).
libpq_url=postgresql://${url#postgresql*://}
export_dir=${SPRIG_EXPORT_DIR:-var/exports}
pg_dump=${SPRIG_PG_BIN:+$SPRIG_PG_BIN/}pg_dump

if [[ -e $dest ]] && [[ -n $(ls -A "$dest") ]]; then
    die "$dest is not empty"
fi
mkdir -p "$dest"

# The database first, then the folder: a run that finishes in between leaves a folder no row
# points to (harmless), never a row whose folder is missing from the backup.
"$pg_dump" --format=custom --no-owner --dbname="$libpq_url" --file="$dest/sprig.dump" ||
    die "pg_dump failed"
if [[ -d $export_dir ]]; then
    tar -C "$export_dir" -cf "$dest/exports.tar" .
else
    tar -cf "$dest/exports.tar" --files-from /dev/null
fi
(cd "$dest" && sha256sum sprig.dump exports.tar >SHA256SUMS)
printf 'backup: wrote %s (database %s bytes, exports %s bytes)\n' "$dest" \
    "$(stat -c %s "$dest/sprig.dump")" "$(stat -c %s "$dest/exports.tar")" >&2
