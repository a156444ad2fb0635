"""A benchmark run's folder: its configuration, its append-only predictions, its log.

``RUN_DIR/run.json`` fixes what the run is (method, model, options, data and database
fingerprints); ``RUN_DIR/predictions.jsonl`` receives one line per finished item, flushed
and fsynced before the next item is counted, so a crash or ``kill -9`` loses at most the
items in flight; ``RUN_DIR/run.log`` (JSON lines) records every start, resume and finish
with the environment. Resuming with a different configuration is refused.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ehrguard.errors import RunError
from ehrguard.runtime import file_sha256 as file_sha256  # re-exported: run folders fingerprint their files with it

PREDICTIONS = "predictions.jsonl"
CONFIG = "run.json"
LOG = "run.log"


def environment() -> dict[str, Any]:
    """Versions and revision that could change a run's numbers."""
    import duckdb
    import sqlglot

    from ehrguard import __version__

    return {
        "ehrguard": __version__,
        "git_revision": _git_revision(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "duckdb": duckdb.__version__,
        "sqlglot": sqlglot.__version__,
        "platform": platform.platform(),
    }


def _git_revision() -> str | None:
    root = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True, timeout=5, check=False)
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


class RunDir:
    """One run's folder. Use :meth:`open` to start or resume."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file: Any = None

    @property
    def predictions_path(self) -> Path:
        return self.path / PREDICTIONS

    def open(self, identity: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
        """Start a new run or resume this one; returns the records already finished, by key.

        Args:
            identity: what makes two runs the same run (method, model, options, data and
                database fingerprints). Stored on the first start, compared on resume.
            extra: more to store with the configuration (prompt hashes, descriptions).

        Raises:
            RunError: the folder holds a run with a different identity.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        config_path = self.path / CONFIG
        if config_path.exists():
            stored = json.loads(config_path.read_text())
            if stored.get("identity") != identity:
                diff = sorted(k for k in set(identity) | set(stored.get("identity", {}))
                              if identity.get(k) != stored.get("identity", {}).get(k))
                raise RunError(
                    f"{self.path} holds a different run (differs in: {', '.join(diff)}). "
                    "Use a new --out folder, or delete this one to start over."
                )
            event = "resume"
        else:
            tmp = config_path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"identity": identity, **(extra or {}), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=2))
            os.replace(tmp, config_path)
            event = "start"
        done = self._recover()
        self.log(event, finished_before=len(done), environment=environment())
        self._file = open(self.predictions_path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())
        return done

    def _recover(self) -> dict[str, dict[str, Any]]:
        """Read finished records; cut a torn last line (the write a crash interrupted)."""
        done: dict[str, dict[str, Any]] = {}
        if not self.predictions_path.exists():
            return done
        data = self.predictions_path.read_bytes()
        good_end = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                break
            done[record["key"]] = record
            good_end += len(line)
        if good_end < len(data):
            with open(self.predictions_path, "r+b") as f:
                f.truncate(good_end)
                os.fsync(f.fileno())
            self.log("truncated", dropped_bytes=len(data) - good_end)
        return done

    def append(self, record: dict[str, Any]) -> None:
        """Write one finished record durably (flush + fsync) before returning."""
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())

    def log(self, event: str, **fields: Any) -> None:
        entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "event": event, **fields}
        with open(self.path / LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, default=str) + "\n")

    def records(self) -> list[dict[str, Any]]:
        return list(self._recover().values())

    def config(self) -> dict[str, Any]:
        path = self.path / CONFIG
        if not path.exists():
            raise RunError(f"{self.path} is not a benchmark run folder (no {CONFIG}).")
        return json.loads(path.read_text())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
