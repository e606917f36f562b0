#!/usr/bin/env bash
# Run a command with throwaway PostgreSQL and Redis servers on loopback.
#
#   scripts/test-services.sh <command...>
#
# Used by `make test` and CI.  Starts a private Redis and a private PostgreSQL
# cluster in a fresh temp dir, exports their URLs (see "Exported environment"
# below), runs <command>, then stops what it started (by PID, from the pid
# files, on EXIT/INT/TERM) and exits with <command>'s exit code.
#
# Nothing is ever started through systemd / init scripts and nothing outside
# the temp dir is touched, so two runs can coexist.  Missing Debian packages
# (redis-server, postgresql) are apt-installed when running as root.
#
# Optional environment:
#   REDIS_PORT, PG_PORT     first port to try (default 6390 / 5439); if a port
#                           is taken the next free one is used.
#   SPRIG_TEST_BROWSER=1    also apt-install Debian `chromium` if missing (for
#                           the browser tests); exports SPRIG_TEST_CHROMIUM.
#   SPRIG_TEST_KEEP_DIR=1   keep the temp dir (logs) after the run.
#
# Exported environment (for the command):
#   SPRIG_TEST_POSTGRES_URL  postgresql+psycopg://postgres@127.0.0.1:<port>/sprig_test
#   SPRIG_TEST_REDIS_URL     redis://127.0.0.1:<port>/0
#   SPRIG_TEST_PG_PORT, SPRIG_TEST_REDIS_PORT
#   SPRIG_TEST_PG_BIN        directory holding initdb/pg_ctl/postgres
#   SPRIG_TEST_PG_DATA       cluster data dir (pg_ctl -D ...)
#   SPRIG_TEST_PG_USER       OS user owning the cluster (run pg_ctl as it)
#   SPRIG_TEST_REDIS_SERVER  path of redis-server
#   SPRIG_TEST_SERVICES_DIR  the temp dir ($D): redis.pid, redis.log, pg/
# Fault tests that restart a service must keep using $D/redis.pid and
# $SPRIG_TEST_PG_DATA so that the cleanup here still finds (and stops) it.
set -euo pipefail

log() { printf 'test-services: %s\n' "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

if [[ $# -eq 0 ]]; then
    echo "usage: $0 <command...>" >&2
    exit 2
fi

is_root() { [[ $EUID -eq 0 ]]; }

newest_pg_bin() {
    local initdb
    # Version dirs sort naturally (13, 15, 16...); print the newest bin dir.
    for initdb in /usr/lib/postgresql/*/bin/initdb; do
        [[ -x $initdb ]] && dirname "$initdb"
    done | sort -V | tail -n 1
}

postgres_pkg_ok() {
    # Binaries present, client present, and (when it matters) the OS user.
    [[ -n $(newest_pg_bin) ]] || return 1
    command -v psql >/dev/null || return 1
    if is_root; then
        getent passwd postgres >/dev/null || return 1
        if command -v dpkg-query >/dev/null; then
            # Half-installed / unconfigured package => let apt finish it.
            [[ $(dpkg-query -W -f='${db:Status-Abbrev}' postgresql 2>/dev/null) == ii* ]] ||
                return 1
        fi
    fi
}

# --------------------------------------------------------------------------
# 1. Packages (only what is missing).
# --------------------------------------------------------------------------
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null || missing+=(redis-tools)
postgres_pkg_ok || missing+=(postgresql)
# `docker-compose config` validates docker-compose.yml (tests/integration/test_compose_file.py);
# it needs no Docker daemon.
command -v docker-compose >/dev/null || missing+=(docker-compose)
# Browser tests are optional: they need Debian's chromium, installed only on
# request so the default test run stays small.
if [[ ${SPRIG_TEST_BROWSER:-0} == 1 ]]; then
    command -v chromium >/dev/null || missing+=(chromium)
    # Fonts for the demo's Chinese and Japanese titles and the 👍/👎 signs, so the
    # tests' screenshots show text and not boxes (6 MB and 10 MB).
    for font in fonts-wqy-microhei fonts-noto-color-emoji; do
        dpkg -s "$font" >/dev/null 2>&1 || missing+=("$font")
    done
fi

if ((${#missing[@]})); then
    if ! is_root; then
        die "missing packages: ${missing[*]}. Install them (sudo apt-get install ${missing[*]}) or run as root."
    fi
    log "installing missing packages: ${missing[*]}"
    # Wait for a concurrent apt/dpkg run instead of failing on its lock.
    apt=(apt-get -o DPkg::Lock::Timeout=300)
    log "+ ${apt[*]} update -q"
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" update -q
    log "+ ${apt[*]} install -y -q ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -q "${missing[@]}"
fi

PGBIN=$(newest_pg_bin)
[[ -n $PGBIN ]] || die "no /usr/lib/postgresql/*/bin/initdb after install"
REDIS_SERVER=$(command -v redis-server) || die "redis-server not found"

# Who runs initdb/pg_ctl: root must drop to `postgres` (postgres refuses to
# run as root); any other user runs them directly and owns the cluster.
if is_root; then
    getent passwd postgres >/dev/null || die "OS user 'postgres' does not exist (is the postgresql package configured?)"
    PG_USER=postgres
    as_pg=(runuser -u postgres --)
else
    PG_USER=$(id -un)
    as_pg=()
fi

# --------------------------------------------------------------------------
# 2. Temp dir + cleanup (installed before anything is started).
# --------------------------------------------------------------------------
D=$(mktemp -d "${TMPDIR:-/tmp}/sprig-test-services.XXXXXX")
chmod 0755 "$D" # the postgres user must be able to reach $D/pg
PGDATA_DIR=$D/pg/data
cmd_pid=

# shellcheck disable=SC2317 # only reached via the traps below
pid_alive() {
    local state
    [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null || return 1
    # A daemon killed by us is re-parented to PID 1 and can linger as a
    # zombie for a moment: that counts as gone.
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 0
    [[ ${state:0:1} != Z ]]
}

# Is PID $1 still the process named $2 (guards against a stale pid file
# whose PID has been reused by something else)?
# shellcheck disable=SC2317 # only reached via the traps below
pid_is() {
    [[ ! -r /proc/$1/comm ]] || [[ $(<"/proc/$1/comm") == "$2" ]]
}

# shellcheck disable=SC2317 # only reached via the traps below
# Wait up to $2 seconds for PID $1 to go away; send SIGKILL if it does not.
stop_pid() {
    local pid=$1 timeout=$2 i
    for ((i = 0; i < timeout * 10; i++)); do
        pid_alive "$pid" || return 0
        sleep 0.1
    done
    log "PID $pid did not exit after ${timeout}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

# shellcheck disable=SC2317 # only reached via the traps below
cleanup() {
    local rc=$? pid
    trap - EXIT
    trap '' INT TERM # do not get interrupted half-way through cleaning up
    set +e
    # The command first (only still running if we were interrupted).
    if pid_alive "$cmd_pid"; then
        kill -TERM "$cmd_pid" 2>/dev/null
        stop_pid "$cmd_pid" 10
    fi
    # Read the pid files now, not at start: fault tests may have restarted
    # a service under a new PID.
    if [[ -f $PGDATA_DIR/postmaster.pid ]]; then
        pid=$(head -n 1 "$PGDATA_DIR/postmaster.pid")
        if pid_alive "$pid" && pid_is "$pid" postgres; then
            log "stopping PostgreSQL (PID $pid)"
            kill -INT "$pid" 2>/dev/null # "fast" shutdown
            stop_pid "$pid" 30
        fi
    fi
    if [[ -f $D/redis.pid ]]; then
        pid=$(<"$D/redis.pid")
        if pid_alive "$pid" && pid_is "$pid" redis-server; then
            log "stopping Redis (PID $pid)"
            kill -TERM "$pid" 2>/dev/null
            stop_pid "$pid" 10
        fi
    fi
    if [[ ${SPRIG_TEST_KEEP_DIR:-0} == 1 ]]; then
        log "kept $D"
    else
        rm -rf -- "$D"
    fi
    exit "$rc"
}
# shellcheck disable=SC2317 # only reached via the traps below
on_signal() {
    local sig=$1 code=$2
    log "got SIG$sig, stopping"
    pid_alive "$cmd_pid" && kill "-$sig" "$cmd_pid" 2>/dev/null
    exit "$code" # runs cleanup via the EXIT trap
}
trap cleanup EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM

show_log() {
    [[ -f $1 ]] || return 0
    log "---- last lines of $1 ----"
    tail -n 30 "$1" >&2 || true
}

port_in_use() {
    local port=$1
    if command -v ss >/dev/null; then
        [[ -n $(ss -Hltn "sport = :$port" 2>/dev/null) ]]
    else
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
    fi
}

free_port() {
    local port=$1 last=$(($1 + 100))
    while ((port <= last)); do
        port_in_use "$port" || {
            echo "$port"
            return 0
        }
        port=$((port + 1))
    done
    die "no free port in $1..$last"
}

# Serialise port selection + start-up between concurrent runs of this script
# (otherwise two runs could both pick the same "free" port).  The lock is on
# fd 9, which the daemons below must not inherit (`9>&-`).
have_lock=
if command -v flock >/dev/null; then
    exec 9>"${TMPDIR:-/tmp}/sprig-test-services.$(id -u).lock"
    flock -w 120 9 || die "could not take the start-up lock"
    have_lock=1
fi

# --------------------------------------------------------------------------
# 3. Redis.
# --------------------------------------------------------------------------
REDIS_PORT=$(free_port "${REDIS_PORT:-6390}")
log "starting Redis on 127.0.0.1:$REDIS_PORT ($D)"
# 64 databases: each pytest-xdist worker owns a block of 16 (tests/xdist_worker.py).
"$REDIS_SERVER" --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes --databases 64 \
    --pidfile "$D/redis.pid" --dir "$D" --logfile "$D/redis.log" \
    --save "" --appendonly no 9>&-

redis_ok=
for ((i = 0; i < 100; i++)); do
    if [[ -s $D/redis.pid ]] &&
        [[ $(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]; then
        # Make sure the PONG came from *our* server, not a concurrent one.
        served_by=$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" info server 2>/dev/null |
            tr -d '\r' | sed -n 's/^process_id://p')
        [[ $served_by == "$(<"$D/redis.pid")" ]] || {
            show_log "$D/redis.log"
            die "port $REDIS_PORT is answered by another Redis (PID $served_by)"
        }
        redis_ok=1
        break
    fi
    sleep 0.1
done
[[ -n $redis_ok ]] || {
    show_log "$D/redis.log"
    die "Redis did not answer PING on port $REDIS_PORT"
}

# --------------------------------------------------------------------------
# 4. PostgreSQL.
# --------------------------------------------------------------------------
PG_PORT=$(free_port "${PG_PORT:-5439}")
log "starting PostgreSQL $("$PGBIN/postgres" -V | awk '{print $3}') on 127.0.0.1:$PG_PORT ($PGBIN)"
if is_root; then
    install -d -o postgres -g postgres "$D/pg"
else
    install -d "$D/pg"
fi
# C.UTF-8 ships with Debian's libc; fall back to the plain C locale elsewhere.
if locale -a 2>/dev/null | grep -qix 'C.utf-\?8'; then
    pg_locale=(--locale=C.UTF-8)
else
    pg_locale=(--no-locale)
fi
# Run from $D so the postgres user does not complain about an unreadable cwd.
(cd "$D" && "${as_pg[@]}" "$PGBIN/initdb" -D "$PGDATA_DIR" -U postgres --auth=trust \
    -E UTF8 "${pg_locale[@]}" >"$D/pg/initdb.log" 2>&1) || {
    show_log "$D/pg/initdb.log"
    die "initdb failed"
}
# fsync/synchronous_commit/full_page_writes are off ONLY because this is a
# throwaway test cluster deleted after the run: never do this elsewhere.  They go
# in postgresql.conf, not on the command line, so that a test can turn durability
# back on with ALTER SYSTEM (which the command line would override): the fault
# tests crash PostgreSQL and must run with fsync and synchronous_commit on.
"${as_pg[@]}" tee -a "$PGDATA_DIR/postgresql.conf" >/dev/null <<'CONF'
# test-services.sh: a throwaway cluster (durability off for speed)
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
(cd "$D" && "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$D/pg/log" \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $D/pg" \
    -w -t 60 start >/dev/null 9>&-) || {
    show_log "$D/pg/log"
    die "PostgreSQL did not start on port $PG_PORT"
}
psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres \
    -c "create database sprig_test" || die "could not create database sprig_test"

if [[ -n $have_lock ]]; then
    flock -u 9
    exec 9>&-
fi

# --------------------------------------------------------------------------
# 5. Run the command.
# --------------------------------------------------------------------------
export SPRIG_TEST_POSTGRES_URL="postgresql+psycopg://postgres@127.0.0.1:$PG_PORT/sprig_test"
export SPRIG_TEST_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
export SPRIG_TEST_REDIS_PORT=$REDIS_PORT
export SPRIG_TEST_PG_PORT=$PG_PORT
export SPRIG_TEST_PG_BIN=$PGBIN
export SPRIG_TEST_PG_DATA=$PGDATA_DIR
export SPRIG_TEST_PG_USER=$PG_USER
export SPRIG_TEST_REDIS_SERVER=$REDIS_SERVER
export SPRIG_TEST_SERVICES_DIR=$D
if [[ ${SPRIG_TEST_BROWSER:-0} == 1 ]]; then
    SPRIG_TEST_CHROMIUM=$(command -v chromium) || die "chromium not found"
    export SPRIG_TEST_CHROMIUM
fi
log "ready: $SPRIG_TEST_POSTGRES_URL  $SPRIG_TEST_REDIS_URL"

# Run in the background and `wait`, so a SIGTERM to this script is handled
# at once (a foreground child would delay the trap until it exits).  The
# subshell restores SIGINT/SIGQUIT (bash ignores them for background jobs)
# and `<&0` keeps stdin (otherwise /dev/null), so the command behaves as if
# it ran in the foreground.
(
    trap - INT QUIT
    exec "$@"
) <&0 &
cmd_pid=$!
rc=0
wait "$cmd_pid" || rc=$?
cmd_pid=
exit "$rc"
