"""A database's value lexicon: the distinct values of its name columns, built once and kept next to the file.

The checks read every value of a database's name columns (drug names, lab and item labels,
diagnosis titles: ~200,000 values on the MIMIC-IV demo) on the first verification; querying
them costs seconds. ``ehrguard db build`` (or ``ehrguard db lexicon DB`` for a database built
elsewhere) writes them to ``<file>.lexicon`` beside the database: a gzip-compressed pickle of plain
values with the database's fingerprint (size, modification time and SHA-256). A lexicon whose
fingerprint does not match its database is stale and ignored: the values are then queried as
before, and ``ehrguard doctor`` says how to rebuild it.
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from ehrguard.runtime import file_sha256

FORMAT = 1
SUFFIX = ".lexicon"
MAX_DISTINCT = 500_000  # as the value index: a column with more distinct values is free text, not names


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a lexicon holds plain values only, not {module}.{name}")


def lexicon_path(db_path: str | Path) -> Path:
    p = Path(db_path)
    return p.with_name(p.name + SUFFIX)


_sha256 = file_sha256


def fingerprint(db_path: Path) -> dict[str, Any]:
    st = db_path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": _sha256(db_path)}


def build_lexicon(db: Any, columns: list[tuple[str, str]]) -> Path:
    """Write the lexicon of ``columns`` (table, column) of the open database ``db`` beside its file, atomically."""
    from ehrguard.db.schema import read_schema

    schema = read_schema(db)
    values: dict[str, list[str] | None] = {}
    for table, column in columns:
        t = schema.table(table)
        c = t.column(column) if t else None
        if t is None or c is None:
            continue
        result = db.execute(f'SELECT DISTINCT CAST("{c.name}" AS TEXT) FROM {t.qualified_name} WHERE "{c.name}" IS NOT NULL',
                            max_rows=MAX_DISTINCT, timeout_s=600)
        values[f"{table.lower()}.{column.lower()}"] = None if result.truncated else [r[0] for r in result.rows]
    body = {"format": FORMAT, "database": fingerprint(db.path), "columns": values}
    out = lexicon_path(db.path)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    with os.fdopen(fd, "wb") as fh:
        fh.write(gzip.compress(pickle.dumps(body, protocol=4), compresslevel=6, mtime=0))
    os.replace(tmp, out)
    return out


def lexicon_state(db_path: str | Path) -> str:
    """``ok``, ``missing`` or ``stale`` (built for another version of the file, or unreadable)."""
    return "ok" if load_lexicon(db_path) is not None else "missing" if not lexicon_path(db_path).is_file() else "stale"


def load_lexicon(db_path: str | Path) -> dict[str, list[str] | None] | None:
    """The lexicon's values by ``table.column`` (None for a column too large to hold), or None when there is no lexicon
    for this version of the file."""
    db = Path(db_path)
    path = lexicon_path(db)
    try:
        body = _PlainUnpickler(io.BytesIO(gzip.decompress(path.read_bytes()))).load()
        recorded = body["database"]
        st = db.stat()
        if body.get("format") != FORMAT or recorded["size"] != st.st_size:
            return None
        # the modification time vouches for the checksum; a copied or touched file is checked in full
        if recorded["mtime_ns"] != st.st_mtime_ns and recorded["sha256"] != _sha256(db):
            return None
        return dict(body["columns"])
    except (OSError, EOFError, pickle.UnpicklingError, KeyError, TypeError, ValueError):
        return None
