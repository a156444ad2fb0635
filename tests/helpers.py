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


def signal_name(returncode: int) -> str:
    """``SIGSEGV`` for a child killed by signal 11 (return code -11); the number when Python has no name for it."""
    import signal

    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def run_in_child(code: str, timeout_s: float = 300) -> str:
    """Run ``code`` with ``python -c`` and return its stdout; a crash, a timeout or an error fails only the calling test.

    For native code that can crash the interpreter (llama.cpp segfaults on some CPUs): in the pytest
    process a segfault would end the whole run and hide every other result. faulthandler puts the
    child's Python stack in the failure message.
    """
    import subprocess
    import sys

    import pytest

    try:
        proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        pytest.fail(f"the child process did not finish in {timeout_s} s:\n{stderr[-3000:]}")
    if proc.returncode < 0:
        pytest.fail(f"the child process was killed by {signal_name(proc.returncode)}:\n{proc.stderr[-3000:]}")
    if proc.returncode != 0:
        pytest.fail(f"the child process exited with code {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc.stdout


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
