"""Helpers shared by the builder tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ehrguard.db import BuildReport, build_database


def sqlite_dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def assert_rebuild_identical(name: str, first: Path, tmp_path: Path, source: Path | None = None) -> BuildReport:
    """Build ``name`` again and require the same SQL dump as ``first`` (determinism); returns the new build's report."""
    again = tmp_path / f"again-{name}.sqlite"
    report = build_database(name, source=source, out=again)
    assert sqlite_dump(again) == sqlite_dump(first)
    return report


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(url: str, proc, log: Path, timeout_s: float = 90) -> None:  # type: ignore[no-untyped-def]
    """Poll ``url`` until it answers; fail with the server's log if the process dies or time runs out."""
    import time
    import urllib.request

    import pytest

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"server at {url} did not start: {log.read_text()[-2000:] if log.exists() else ''}")
            time.sleep(0.2)
