"""The runtime owns the process-wide caches: keyed by what invalidates them, closed on reset."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from ehrguard.runtime import Runtime, runtime


def test_memo_builds_once_even_under_concurrent_first_calls():
    rt = Runtime()
    builds = []

    def build():
        builds.append(1)
        time.sleep(0.05)
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(rt.memo("ns", "k", build))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len({id(g) for g in got}) == 1


def test_reset_closes_what_it_holds_and_forgets_it():
    rt = Runtime()
    closed = []
    first = rt.memo("pools", "m", lambda: ["pool"], close=closed.append)
    rt.reset()
    assert closed == [["pool"]]
    assert rt.memo("pools", "m", lambda: ["new pool"]) == ["new pool"] and first == ["pool"]


def test_a_rebuilt_database_file_is_opened_anew_and_the_old_handle_closed(synthetic_db: Path, tmp_path: Path):
    rt = Runtime()
    path = tmp_path / "copy.sqlite"
    shutil.copy(synthetic_db, path)
    first = rt.database_context(path)
    assert rt.database_context(path) is first  # same file, same context
    n = first.db.execute("SELECT COUNT(*) FROM patients").rows[0][0]
    shutil.copy(synthetic_db, tmp_path / "tmp.sqlite")
    os.replace(tmp_path / "tmp.sqlite", path)  # a rebuild replaces the file atomically
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    second = rt.database_context(path)
    assert second is not first and second.db.execute("SELECT COUNT(*) FROM patients").rows[0][0] == n
    rt.reset()
    assert rt.open_contexts() == []


def test_the_default_runtime_holds_the_verifier_databases(synthetic_db: Path):
    from ehrguard.verify.api import database_context

    ctx = database_context(synthetic_db)
    assert ctx in runtime().open_contexts() and database_context(synthetic_db) is ctx
