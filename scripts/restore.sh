#!/usr/bin/env bash
# Restore a Sprig backup made by scripts/backup.sh into an empty database and export folder.
#
#   scripts/restore.sh SRC
#
# Reads SPRIG_DATABASE_URL and SPRIG_EXPORT_DIR like the app. The database must exist and have
# no tables in its public schema (create it fresh: createdb, or the compose db service's first
# start); the export folder must be absent or empty. Restore the folder to the SAME path the
# backed-up app used: each export run's row records its folder's absolute path. Stop web,
# worker and beat first, start them after; then `sprig db upgrade` brings an older backup up to
# the running code's schema. pg_restore and psql come from SPRIG_PG_BIN if set, else PATH.
set -euo pipefail

die() {
    printf 'restore: %s\n' "$*" >&2
    exit 1
}

[[ $# -eq 1 ]] || {
    echo "usage: $0 SRC" >&2
    exit 2
}
src=$1
url=${SPRIG_DATABASE_URL:-}
[[ $url == postgresql* ]] || die "SPRIG_DATABASE_URL must be a PostgreSQL URL (got '${url%%:*}')"
# libpq does not know SQLAlchemy's driver suffix (postgresql+psycopg://).
libpq_url=postgresql://${url#postgresql*://}
export_dir=${SPRIG_EXPORT_DIR:-var/exports}
bin=${SPRIG_PG_BIN:+$SPRIG_PG_BIN/}

[[ -f $src/SHA256SUMS ]] || die "$src has no SHA256SUMS: not a backup made by scripts/backup.sh"
(cd "$src" && sha256sum --check --quiet SHA256SUMS) || die "checksums of $src do not match"

tables=$("${bin}psql" -X -At -v ON_ERROR_STOP=1 --dbname="$libpq_url" \
    -c "select count(*) from pg_tables where schemaname = 'public'") ||
    die "cannot reach the database"
[[ $tables == 0 ]] || die "the database already has $tables tables: restore into an empty one"
if [[ -e $export_dir ]] && [[ -n $(ls -A "$export_dir") ]]; then
    die "$export_dir is not empty"
fi

# One transaction: a restore that fails half-way leaves the database empty, not half-filled.
"${bin}pg_restore" --exit-on-error --single-transaction --no-owner --no-privileges \
    --dbname="$libpq_url" "$src/sprig.dump" || die "pg_restore failed"
mkdir -p "$export_dir"
tar -C "$export_dir" -xf "$src/exports.tar"
printf 'restore: restored %s into the database and %s\n' "$src" "$export_dir" >&2
