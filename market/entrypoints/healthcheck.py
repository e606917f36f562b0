"""Container health checks, run by Docker inside the image (which has Python but no curl):

    python -m market.entrypoints.healthcheck url http://127.0.0.1:8000/readyz
    python -m market.entrypoints.healthcheck fresh /app/var/celerybeat-schedule 600

``url`` is healthy when the URL answers 2xx within its timeout; ``fresh`` when a file whose
name starts with the path (beat's schedule store may add a suffix such as ``.db``) changed in
the last N seconds: beat rewrites it every few minutes while it runs. Exit 0 when healthy,
1 (with the reason on stderr) when not, 2 on a usage error.
"""

from __future__ import annotations

import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

URL_TIMEOUT_S = 5.0


def check_url(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=URL_TIMEOUT_S) as response:  # noqa: S310 - operator's URL
            status = response.status
    except urllib.error.HTTPError as error:
        return f"{url} answered {error.code}"
    except OSError as error:
        return f"{url} unreachable: {error}"
    return None if 200 <= status < 300 else f"{url} answered {status}"


def check_fresh(path: str, max_age_s: float, now: float | None = None) -> str | None:
    target = Path(path)
    found = [p for p in target.parent.glob(f"{target.name}*") if p.is_file()]
    if not found:
        return f"no file {path}*"
    age = (time.time() if now is None else now) - max(p.stat().st_mtime for p in found)
    return None if age <= max_age_s else f"{path} last changed {age:.0f} s ago (> {max_age_s:g})"


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "url":
        problem = check_url(argv[1])
    elif len(argv) == 3 and argv[0] == "fresh" and argv[2].isdigit():
        problem = check_fresh(argv[1], float(argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
