"""Where a benchmark's PostgreSQL comes from (the one configured, or a throwaway one), and
where the servers it starts write their log lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent


def database_url_or_rerun_with_servers() -> str:
    """The PostgreSQL URL to benchmark against. Without one, run this same command again
    under scripts/test-services.sh, which starts PostgreSQL and Redis on loopback and stops
    them afterwards (this call then does not return)."""
    url = os.environ.get("SPRIG_BENCH_DATABASE_URL") or os.environ.get("SPRIG_TEST_POSTGRES_URL")
    if url:
        return url
    script = ROOT / "scripts" / "test-services.sh"
    os.execv(str(script), [str(script), sys.executable, *sys.argv])  # noqa: S606
    raise AssertionError("unreachable")


def server_stdout() -> IO[bytes] | int:
    """Where a benchmarked server's stdout (its log lines) goes: the file named by
    ``SPRIG_BENCH_STDOUT``, appended to, as a log collector would read it (the observability
    bench counts its lines), else nowhere."""
    path = os.environ.get("SPRIG_BENCH_STDOUT")
    return open(path, "ab") if path else subprocess.DEVNULL


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user and system, every thread) the processes ``pids`` have used so far, from
    /proc; a process that has gone counts nothing."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


def live_children(pid: int) -> list[int]:
    """The child processes of ``pid`` that are still running (zombies left out), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return sorted(found)


def memory_mib(pid: int) -> dict[str, float]:
    """A process's resident memory in MiB from /proc/<pid>/smaps_rollup: ``rss`` counts every
    page it maps in full; ``pss`` divides each shared page among the processes sharing it, so
    the ``pss`` of a master and its forked workers add up to what they hold together."""
    figures = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("Rss", "Pss"):
            figures[name.lower()] = round(int(value.split()[0]) / 1024, 1)
    return figures
