"""A database's value lexicon: the distinct values of its name columns, built once and kept next to the file.

The checks read every value of a database's name columns (drug names, lab and item labels,
diagnosis titles: ~200,000 values on the MIMIC-IV demo) on the first verification; querying
them costs seconds. ``ehrguard db build`` (or ``ehrguard db lexicon DB`` for a database built
elsewhere) writes them to ``<file>.lexicon`` beside the database: a gzip-compressed pickle of plain
values (each column's values and their normal forms) with the database's fingerprint (size,
modification time and SHA-256). A lexicon whose
fingerprint does not match its database is stale and ignored: the values are then queried as
before, and ``ehrguard doctor`` says how to rebuild it.
"""

from __future__ import annotations

import os
import pickle
import re
import tempfile
from pathlib import Path
from typing import Any

from ehrguard.runtime import dump_plain, file_sha256, load_plain

FORMAT = 2
SUFFIX = ".lexicon"
MAX_DISTINCT = 500_000  # as the value index: a column with more distinct values is free text, not names


# Every ASCII character that is not a lower-case letter or a digit, as a space: normal_form by str.translate.
_SPACES = str.maketrans({chr(i): " " for i in range(128) if not (chr(i).isdigit() or "a" <= chr(i) <= "z")})
_WORD = re.compile(r"[a-z0-9]+")


def normal_form(text: str) -> str:
    """A value or a phrase as its lower-case words and digits, one space apart: ``'Heparin (Porcine)'`` -> ``'heparin porcine'``."""
    return " ".join(_WORD.findall(text.lower()))


def normal_forms(values: list[str]) -> list[str]:
    """:func:`normal_form` of every value (a column can hold 100,000 names): by translation, and by the regular
    expression only for the few values with characters beyond ASCII."""
    out = []
    for v in values:
        low = v.lower()
        out.append(" ".join(low.translate(_SPACES).split()) if low.isascii() else normal_form(v))
    return out


def lexicon_path(db_path: str | Path) -> Path:
    p = Path(db_path)
    return p.with_name(p.name + SUFFIX)




def fingerprint(db_path: Path) -> dict[str, Any]:
    st = db_path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": file_sha256(db_path)}


def build_lexicon(db: Any, columns: list[tuple[str, str]]) -> Path:
    """Write the lexicon of ``columns`` (table, column) of the open database ``db`` beside its file, atomically."""
    from ehrguard.db.schema import read_schema

    schema = read_schema(db)
    values: dict[str, dict[str, list[str]] | None] = {}
    for table, column in columns:
        t = schema.table(table)
        c = t.column(column) if t else None
        if t is None or c is None:
            continue
        result = db.execute(f'SELECT DISTINCT CAST("{c.name}" AS TEXT) FROM {t.qualified_name} WHERE "{c.name}" IS NOT NULL',
                            max_rows=MAX_DISTINCT, timeout_s=600)
        found = [r[0] for r in result.rows]
        values[f"{table.lower()}.{column.lower()}"] = None if result.truncated else {"values": found, "normals": normal_forms(found)}
    body = {"format": FORMAT, "database": fingerprint(db.path), "columns": values}
    out = lexicon_path(db.path)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(dump_plain(body, level=6))
        os.chmod(tmp, db.path.stat().st_mode & 0o666 | 0o444)  # readable wherever the database is (mkstemp makes it 0600)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def lexicon_state(db_path: str | Path) -> str:
    """``ok``, ``missing`` or ``stale`` (built for another version of the file, or unreadable)."""
    return "ok" if load_lexicon(db_path) is not None else "missing" if not lexicon_path(db_path).is_file() else "stale"


def load_lexicon(db_path: str | Path) -> dict[str, dict[str, list[str]] | None] | None:
    """The lexicon's columns by ``table.column``: ``{"values": [...], "normals": [...]}`` (their :func:`normal_form`, in
    the same order), or None for a column too large to hold; None when there is no lexicon for this version of the file."""
    db = Path(db_path)
    path = lexicon_path(db)
    try:
        body = load_plain(path.read_bytes())
        recorded = body["database"]
        st = db.stat()
        if body.get("format") != FORMAT or recorded["size"] != st.st_size:
            return None
        # the modification time vouches for the checksum; a copied or touched file is checked in full
        if recorded["mtime_ns"] != st.st_mtime_ns and recorded["sha256"] != file_sha256(db):
            return None
        return dict(body["columns"])
    except (OSError, EOFError, pickle.UnpicklingError, KeyError, TypeError, ValueError):
        return None
