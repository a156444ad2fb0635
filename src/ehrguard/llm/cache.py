"""A SQLite response cache keyed on everything that changes a reply, and nothing that does not.

Key: provider, model, base URL, messages, temperature, seed, max tokens, stop sequences and
response schema. Not in the key: time limits, concurrency, retries. Errors are never cached.
Modes: ``on`` (read and write), ``off``, ``replay-only`` (read; a miss raises
:class:`~ehrguard.errors.CacheMissError`, which is how a run is reproduced exactly).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from ehrguard.errors import CacheMissError, ConfigError
from ehrguard.llm.types import Completion, GenerateConfig, Message

MODES = ("on", "off", "replay-only")


def cache_key(provider: str, model: str, base_url: str, messages: list[Message], config: GenerateConfig) -> str:
    payload = {"provider": provider, "model": model, "base_url": base_url.rstrip("/"), "messages": messages, **config.cache_fields()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class ResponseCache:
    def __init__(self, path: str | Path, mode: str = "on") -> None:
        if mode not in MODES:
            raise ConfigError(f"Cache mode {mode!r} is not one of {', '.join(MODES)}.")
        self.mode = mode
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if mode != "off":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, completion TEXT NOT NULL, created REAL NOT NULL)")

    def get(self, key: str) -> Completion | None:
        if self._conn is None:
            return None
        with self._lock:
            row = self._conn.execute("SELECT completion FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            if self.mode == "replay-only":
                raise CacheMissError("Replay-only cache: this call was never made before (a changed prompt, model or setting?).")
            return None
        data: dict[str, Any] = json.loads(row[0])
        return Completion(**{**data, "cached": True})

    def put(self, key: str, completion: Completion) -> None:
        if self._conn is None or self.mode == "replay-only":
            return
        data = completion.to_dict()
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?)", (key, json.dumps(data, default=str), time.time()))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
