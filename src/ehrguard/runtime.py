"""The runtime: the one owner of everything ehrguard keeps between calls in a process.

Open databases (with their schema and value index), question models, template and form banks,
the embedding model, LLM concurrency limits and thread pools, loaded local models and the scripted
providers of tests all live here, each under a key that says what invalidates it: a database by its
resolved path *and* the file's modification time and size (a rebuilt file is opened anew and the old
handle closed), a bank by its database id and data directory, a model by its configuration.

Code asks :func:`runtime` for the default instance; tests call :func:`reset_runtime` to start clean.

Examples:
    >>> from ehrguard.runtime import runtime
    >>> bank = runtime().memo("example", ("key",), lambda: {"built": True})
    >>> runtime().memo("example", ("key",), lambda: {"built": False})
    {'built': True}
"""

from __future__ import annotations

import gzip
import hashlib
import io
import pickle
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ehrguard.verify.methods import DatabaseContext

T = TypeVar("T")


def file_key(path: str | Path) -> tuple[str, int, int]:
    """What identifies one version of a file: its resolved path, modification time (ns) and size."""
    p = Path(path).resolve()
    st = p.stat()
    return str(p), st.st_mtime_ns, st.st_size


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, read a megabyte at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def release_freed_memory() -> None:
    """Give the memory the C allocator holds free back to the system (glibc's ``malloc_trim``; elsewhere nothing).
    Worth it after a one-off burst of large temporary allocations (opening an ONNX model)."""
    import ctypes
    import sys

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):  # not glibc
            pass


class _PlainUnpickler(pickle.Unpickler):
    """Reads plain values only (tuples, lists, dicts, strings, numbers): a file that names any class or function is
    refused, so a crafted file cannot run code."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a file of plain values names {module}.{name}")


def dump_plain(value: Any, level: int = 9) -> bytes:
    """``value`` (plain values only) as gzip-compressed pickle, with no timestamp: the same value gives the same bytes."""
    return gzip.compress(pickle.dumps(value, protocol=4), compresslevel=level, mtime=0)


def load_plain(data: bytes) -> Any:
    """What :func:`dump_plain` wrote.

    Raises:
        pickle.UnpicklingError, OSError, EOFError: the bytes are not a file of plain values.
    """
    return _PlainUnpickler(io.BytesIO(gzip.decompress(data))).load()


class Runtime:
    """Owns the process-wide caches. Thread-safe: concurrent first requests for one key build it once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[str, Hashable], threading.Lock] = {}
        self._memo: dict[str, dict[Hashable, Any]] = {}
        self._closers: dict[str, Callable[[Any], None]] = {}
        self._contexts: dict[str, tuple[tuple[str, int, int], DatabaseContext]] = {}

    # -- generic keyed caches -------------------------------------------------------------------------

    def memo(self, namespace: str, key: Hashable, build: Callable[[], T], *, close: Callable[[T], None] | None = None) -> T:
        """The value cached under ``(namespace, key)``, built by ``build()`` the first time (once, under a lock
        for that key). ``close`` is called on the value when the runtime is reset."""
        with self._lock:
            space = self._memo.setdefault(namespace, {})
            if key in space:
                return space[key]
            lock = self._key_locks.setdefault((namespace, key), threading.Lock())
            if close is not None:
                self._closers[namespace] = close
        with lock:
            with self._lock:
                if key in space:
                    return space[key]
            value = build()
            with self._lock:
                space[key] = value
            return value

    def peek(self, namespace: str, key: Hashable) -> Any:
        """The cached value, or None; never builds."""
        with self._lock:
            return self._memo.get(namespace, {}).get(key)

    def forget(self, *namespaces: str) -> None:
        """Drop (and close) what is cached in these namespaces."""
        with self._lock:
            dropped = {ns: self._memo.pop(ns, {}) for ns in namespaces}
            for ns in namespaces:
                for k in [k for k in self._key_locks if k[0] == ns]:
                    del self._key_locks[k]
        for ns, space in dropped.items():
            closer = self._closers.get(ns)
            if closer is not None:
                for value in space.values():
                    _quietly(closer, value)

    # -- databases ------------------------------------------------------------------------------------

    def database_context(self, path: str | Path, db_id: str | None = None) -> DatabaseContext:
        """The open database at ``path`` with its schema and value index, shared by every caller.

        Keyed by the resolved path; when the file changed since it was opened (rebuilt, replaced), the
        old handle is closed and the new file opened. ``db_id`` names the profile (default: from the
        file name) and is fixed by the first caller.
        """
        from ehrguard.db.engine import open_database
        from ehrguard.profiles import profile_for_file
        from ehrguard.verify.methods import DatabaseContext

        version = file_key(path)
        stale = None
        with self._lock:
            held = self._contexts.get(version[0])
            if held is not None and held[0] == version:
                return held[1]
            if held is not None:
                stale = held[1]
                del self._contexts[version[0]]
        if stale is not None:
            _quietly(lambda c: c.db.close(), stale)
        with self._lock:
            held = self._contexts.get(version[0])
            if held is not None and held[0] == version:
                return held[1]
            ctx = DatabaseContext(open_database(path), db_id or profile_for_file(path).db_id, path)
            self._contexts[version[0]] = (version, ctx)
            return ctx

    def open_contexts(self) -> list[DatabaseContext]:
        with self._lock:
            return [ctx for _, ctx in self._contexts.values()]

    # -- lifecycle ------------------------------------------------------------------------------------

    def reset(self) -> None:
        """Close every open database and drop every cache (tests; after the data directory changed)."""
        with self._lock:
            contexts = [ctx for _, ctx in self._contexts.values()]
            self._contexts.clear()
            namespaces = list(self._memo)
        self.forget(*namespaces)
        for ctx in contexts:
            _quietly(lambda c: c.db.close(), ctx)

    close = reset


def _quietly(fn: Callable[[Any], Any], value: Any) -> None:
    try:
        fn(value)
    except Exception:  # noqa: BLE001 (closing a handle during reset must not hide the reset of the others)
        pass


_DEFAULT = Runtime()


def runtime() -> Runtime:
    """The process's runtime."""
    return _DEFAULT


def reset_runtime() -> None:
    """Close and forget everything the process's runtime holds."""
    _DEFAULT.reset()


__all__ = ["Runtime", "dump_plain", "file_key", "file_sha256", "load_plain", "reset_runtime", "runtime"]
