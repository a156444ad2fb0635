"""Queries in worker processes: a deadline and a memory cap that hold whatever the engine does.

An engine can be interrupted only between steps: DuckDB does not stop while it parses or plans,
and one expensive value (``repeat('x', 1e9)``, ``list_sum(range(2e8))``) runs to its end. So each
query runs in a worker process, ``python -m ehrguard.db.worker PATH``, which opens one database
with the same read-only guard, caps its own memory (``query_memory`` plus what the interpreter
needs), and answers requests framed on its stdin and stdout. The engine's own time limit stops
most queries; a worker that has not answered ``DEADLINE_FACTOR`` times the limit (plus
``DEADLINE_SLACK_S``) later is killed and replaced, and a worker that dies (out of memory) is
replaced too. The caller gets a typed error; nothing else in the process is touched.

Workers are pooled per database file (at most ``2 * max_concurrent_queries`` each, so a few
runaway queries cannot take every worker), kept between queries, and the idle ones beyond
:data:`MAX_IDLE` are stopped, least recently used first; one left holding much memory after a query is
replaced. They exit when their parent does (their stdin closes).
"""

from __future__ import annotations

import atexit
import os
import pickle
import resource
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ehrguard import errors
from ehrguard.config import int_setting
from ehrguard.db.limits import QueryLimits

DEADLINE_FACTOR = 1.2
DEADLINE_SLACK_S = 0.25
START_TIMEOUT_S = 60.0
MAX_IDLE = 8
# A worker whose resident memory is past half the query memory (and this) after a query is replaced, not kept idle.
RECYCLE_MIN_MIB = 256
# Address space an idle worker needs beyond the query's memory: the interpreter, the engine's
# libraries and thread stacks (measured: about 0.9 GiB of address space for a DuckDB worker).
BASE_ADDRESS_SPACE = 2 << 30
WORKER_NICENESS = 5
_HEADER = struct.Struct("!Q")


class _Stalled(Exception):
    """The worker did not answer by the deadline."""


class _Died(Exception):
    """The worker's pipe closed: it exited or was killed."""


# ---------------------------------------------------------------------------- the worker's side


def _write(stream: Any, message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read(stream: Any) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    return pickle.loads(stream.read(size))


def serve(path: str) -> None:
    """The worker's loop: open ``path``, then answer each request until stdin closes."""
    requests = sys.stdin.buffer
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray output must not corrupt the replies
    memory = int_setting("query_memory") << 20
    os.nice(WORKER_NICENESS)  # under CPU contention the server's own work (verification) goes first
    resource.setrlimit(resource.RLIMIT_AS, (memory + BASE_ADDRESS_SPACE, memory + BASE_ADDRESS_SPACE))
    from ehrguard.db.engine import DuckDBDatabase, SQLiteDatabase, _sqlite_heap_limit, open_database

    db = open_database(path, isolated=False)
    assert isinstance(db, (SQLiteDatabase, DuckDBDatabase)), "workers run file databases only"
    if db.dialect == "sqlite":
        _sqlite_heap_limit()
    _write(replies, ("ready",))
    while (request := _read(requests)) is not None:
        sql, limits = request
        try:
            _write(replies, ("ok", db.execute_here(sql, limits)))
        except errors.EhrguardError as exc:
            _write(replies, ("error", type(exc).__name__, str(exc)))
        except MemoryError:
            _write(replies, ("memory",))
        except Exception as exc:  # the engine failed in a way it does not type: still an answer, not a dead worker
            _write(replies, ("error", "QueryExecutionError", f"{type(exc).__name__}: {exc}"))


# ---------------------------------------------------------------------------- the caller's side


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, path: Path) -> None:
        import ehrguard

        env = dict(os.environ)
        package_root = str(Path(ehrguard.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        self._stderr = tempfile.TemporaryFile()
        self._buffer = bytearray()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ehrguard.db.worker", str(path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env, close_fds=True,
        )
        self.used = time.monotonic()
        try:
            reply = self.receive(self.used + START_TIMEOUT_S)
        except (_Stalled, _Died):
            reply = None
        if reply != ("ready",):
            self._stderr.seek(0)
            lines = self._stderr.read().decode(errors="replace").strip().splitlines()
            self.kill()
            raise errors.QueryWorkerError(f"Could not start a query worker for {path}: {lines[-1] if lines else 'no reason given'}")

    def send(self, request: object) -> None:
        assert self.proc.stdin is not None
        try:
            data = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.write(_HEADER.pack(len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise _Died() from exc

    def receive(self, deadline: float) -> Any:
        """The next reply, read by ``deadline``; bytes read before a stall are kept for the next call."""
        size = self._fill(_HEADER.size, deadline) and _HEADER.unpack(bytes(self._buffer[: _HEADER.size]))[0]
        self._fill(_HEADER.size + size, deadline)
        message = pickle.loads(bytes(self._buffer[_HEADER.size : _HEADER.size + size]))
        del self._buffer[: _HEADER.size + size]
        self.used = time.monotonic()
        return message

    def _fill(self, n: int, deadline: float) -> bool:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while len(self._buffer) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise _Stalled()
            chunk = os.read(fd, min(n - len(self._buffer), 1 << 20))
            if not chunk:
                raise _Died()
            self._buffer += chunk
        return True

    def kill(self) -> None:
        """Kill the process; it is reaped in the background (a process holding gigabytes takes a while to go)."""
        try:
            self.proc.kill()
        except OSError:
            pass
        for stream in (self.proc.stdin, self.proc.stdout, self._stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        threading.Thread(target=self.proc.wait, daemon=True).start()


class _Pool:
    """The workers of one database file: at most ``size``, idle ones kept."""

    def __init__(self, path: Path, size: int, key: tuple[str, int, int] | None = None) -> None:
        self.path, self.size, self.key = path, size, key
        self.idle: list[_Worker] = []
        self.count = 0
        self.starting = 0  # workers starting in the background
        self.cond = threading.Condition(_LOCK)

    def acquire(self) -> _Worker:
        deadline = time.monotonic() + START_TIMEOUT_S
        with self.cond:
            # a worker starting in the background is further along than a new one would be: wait for it
            while not self.idle and (self.count >= self.size or self.starting):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise errors.QueryWorkerError(f"Every query worker for {self.path} stayed busy for {START_TIMEOUT_S:g} s. "
                                                  "Retry later, or raise EHRGUARD_MAX_CONCURRENT_QUERIES.")
                self.cond.wait(remaining)
            if self.idle:
                return self.idle.pop()
            self.count += 1
        try:
            return _Worker(self.path)
        except BaseException:
            with self.cond:
                self.count -= 1
                self.cond.notify()
            raise

    def release(self, worker: _Worker) -> None:
        if _resident_mib(worker.proc.pid) > max(RECYCLE_MIN_MIB, int_setting("query_memory") // 2):
            # it kept the memory of a large query (an engine holds on to what it allocated): an idle worker must not pin
            # it until the server stops, so it is replaced by a fresh one
            self.discard(worker, replace=True)
            return
        with self.cond:
            if self.key is not None and _POOLS.get(self.key) is not self:  # stopped, or its file was rebuilt
                self.count -= 1
                worker.kill()
                return
            self.idle.append(worker)
            self.cond.notify_all()
            _stop_surplus()

    def discard(self, worker: _Worker, *, replace: bool = False) -> None:
        """Kill ``worker``; with ``replace``, start its successor in the background, so the next query finds it warm."""
        worker.kill()
        if replace:
            self._start_in_background()
            return
        with self.cond:
            self.count -= 1
            self.cond.notify()

    def prepare_spare(self) -> bool:
        """Start one more worker in the background (a query is past its limit and may be killed), room allowing."""
        with self.cond:
            if self.count >= self.size or self.idle:
                return bool(self.idle)
            self.count += 1
        self._start_in_background()
        return True

    def _start_in_background(self) -> None:
        """Start a worker already counted in ``count``, in a thread of its own."""
        with self.cond:
            self.starting += 1
        threading.Thread(target=self._replace, daemon=True).start()

    def _replace(self) -> None:
        try:
            fresh = _Worker(self.path)
        except Exception:  # noqa: BLE001 - any failure must give the slot back, or acquire would wait for it forever
            with self.cond:
                self.count -= 1
                self.starting -= 1
                self.cond.notify_all()
            return
        with self.cond:
            self.starting -= 1
        self.release(fresh)


def _resident_mib(pid: int) -> int:
    """A process's resident memory in MiB, from /proc (0 where that cannot be read: nothing is recycled there)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) >> 10
    except (OSError, ValueError, IndexError):
        pass
    return 0


_LOCK = threading.RLock()
_POOLS: dict[tuple[str, int, int], _Pool] = {}


def _stop_surplus() -> None:
    """Stop the least recently used idle workers beyond :data:`MAX_IDLE` (called holding ``_LOCK``)."""
    idle = sorted(((w.used, id(w), pool, w) for pool in _POOLS.values() for w in pool.idle), key=lambda t: (t[0], t[1]))
    for _, _, pool, worker in idle[: max(0, len(idle) - MAX_IDLE)]:
        pool.idle.remove(worker)
        pool.count -= 1
        worker.kill()


def _pool(path: Path) -> _Pool:
    resolved = path.resolve()
    stat = resolved.stat()
    key = (str(resolved), stat.st_ino, stat.st_mtime_ns)
    with _LOCK:
        for old in [k for k in _POOLS if k[0] == key[0] and k != key]:  # the file was rebuilt: its old workers read the old file
            for worker in _POOLS[old].idle:
                worker.kill()
            _POOLS[old].idle.clear()
            del _POOLS[old]
        if key not in _POOLS:
            _POOLS[key] = _Pool(resolved, 2 * int_setting("max_concurrent_queries"), key)
        return _POOLS[key]


def start_worker(path: Path) -> None:
    """Start a query worker for ``path`` in the background, unless one is idle or the pool is full: the first query
    then finds it ready (an entry point calls this before it loads the rest)."""
    _pool(path).prepare_spare()


def run_in_worker(path: Path, sql: str, limits: QueryLimits) -> Any:
    """Run a checked query on ``path`` in a worker, within a hard deadline.

    Raises:
        QueryTimeoutError: no answer by the deadline (the worker is killed and replaced).
        QueryResourceError: the worker ran out of memory or died.
        DatabaseError: the worker could not start, or the engine's own typed error.
    """
    from ehrguard.db.engine import _memory_error, _timeout_error

    pool = _pool(path)
    worker = pool.acquire()
    try:
        worker.send((sql, limits))
    except _Died:  # it died while idle (killed from outside): the query never ran, so it runs on a fresh one
        pool.discard(worker)
        worker = pool.acquire()
        try:
            worker.send((sql, limits))
        except _Died:
            pool.discard(worker)
            raise errors.QueryWorkerError(f"The query workers for {path} stop as they start. See ehrguard doctor.") from None
    started, spared = time.monotonic(), False
    try:
        try:  # most queries answer, or are stopped by the engine, by their limit
            reply = worker.receive(started + limits.timeout_s * 1.05 + 0.05)
        except _Stalled:  # past it: it may have to be killed, so warm its successor now
            spared = pool.prepare_spare()
            reply = worker.receive(started + limits.timeout_s * DEADLINE_FACTOR + DEADLINE_SLACK_S)
    except _Stalled:
        pool.discard(worker, replace=not spared)
        raise _timeout_error(limits.timeout_s) from None
    except _Died:
        try:
            code: int | None = worker.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            code = None
        pool.discard(worker, replace=not spared)
        raise errors.QueryResourceError(
            f"The query's worker process stopped ({'exit code ' + str(code) if code is not None else 'killed'}), most likely out of memory "
            f"(the limit is {int_setting('query_memory')} MiB). Narrow the query or raise EHRGUARD_QUERY_MEMORY."
        ) from None
    except BaseException:
        pool.discard(worker)
        raise
    pool.release(worker)
    if reply[0] == "ok":
        return reply[1]
    if reply[0] == "memory":
        raise _memory_error()
    cls = getattr(errors, reply[1], errors.QueryExecutionError)
    raise (cls if isinstance(cls, type) and issubclass(cls, errors.EhrguardError) else errors.QueryExecutionError)(reply[2])


def stop_workers() -> None:
    """Stop every worker (at exit, and for tests)."""
    with _LOCK:
        for pool in _POOLS.values():
            for worker in pool.idle:
                worker.kill()
            pool.count -= len(pool.idle)
            pool.idle.clear()
        _POOLS.clear()


atexit.register(stop_workers)


if __name__ == "__main__":
    serve(sys.argv[1])
