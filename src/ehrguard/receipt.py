"""Answer receipts: a self-contained, signed record of one decision that reached a person.

A receipt says what ehrguard was asked and what it answered, and with what: the question, the
candidate and final SQL, the verdict with its status, reason and findings, the database (file
checksum and profile), the checksums of the knowledge the verifier used (question models,
calibration, question banks, tokenizer, the database's value lexicon), ehrguard's version, and a
fingerprint of the result rows (SHA-256 of their canonical JSON; the rows themselves are not in it,
since they can hold patient data).

The body is signed with HMAC-SHA256 under a key the deployment configures (``receipt_key``, or a
file named by ``receipt_key_file``); ``key_id`` names the key without revealing it. Without a key a
receipt still carries its body's SHA-256, which shows accidental damage but proves nothing about who
wrote it. :func:`check_receipt` verifies one: the digest, the signature, and with a database at
hand whether it is the same database and whether the SQL still gives the same rows.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ehrguard.config import setting, setting_value
from ehrguard.errors import ConfigError

if TYPE_CHECKING:
    from ehrguard.answer import Answer
    from ehrguard.db.engine import Database
    from ehrguard.profiles import DatabaseProfile

FORMAT = "ehrguard-receipt/1"
ALGORITHM = "HMAC-SHA256"
_UNSIGNED = ("signature", "digest")  # what the digest and the signature are not computed over


def canonical(value: Any) -> bytes:
    """The bytes a receipt's digest and signature are computed over: JSON with sorted keys and no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def result_fingerprint(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """SHA-256 of a result's columns and rows, in order, as canonical JSON (the same rows give the same fingerprint
    whichever engine produced them, as long as the values are the same)."""
    return hashlib.sha256(canonical({"columns": list(columns), "rows": [list(r) for r in rows]})).hexdigest()


def receipt_key() -> bytes | None:
    """The deployment's signing key: the ``receipt_key`` setting, else the contents of ``receipt_key_file``; None when
    neither is set (receipts are then unsigned)."""
    key = setting("receipt_key")
    if key:
        return key.encode()
    path = setting_value("receipt_key_file")
    return read_key_file(path, "fix receipt_key_file") if isinstance(path, Path) else None


def read_key_file(path: str | Path, fix: str) -> bytes:
    """A signing key from a file (surrounding whitespace dropped); ``fix`` says where to correct a bad one.

    Raises:
        ConfigError: the file cannot be read, or is empty.
    """
    try:
        data = Path(path).read_bytes().strip()
    except OSError as exc:
        raise ConfigError(f"The receipt key file {path} cannot be read ({exc.strerror}): {fix}.") from None
    if not data:
        raise ConfigError(f"The receipt key file {path} is empty: put a long random secret in it.")
    return data


def key_id(key: bytes) -> str:
    """A name for a key that does not reveal it: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(key).hexdigest()[:16]


def _file_sha256(path: Path, recorded: Callable[[Path], str | None] | None = None) -> str | None:
    """A file's SHA-256, worked out once per file version (receipts are per request), from ``recorded`` when it knows
    it; None when there is no file."""
    from ehrguard.runtime import file_key, file_sha256, runtime

    try:
        stamp = file_key(path)
    except OSError:
        return None
    return runtime().memo("receipt-sha256", stamp, lambda: (recorded and recorded(path)) or file_sha256(path))


def database_sha256(path: Path) -> str | None:
    """A database file's SHA-256: as its value lexicon recorded it when the file is unchanged since (hashing a full
    MIMIC-IV file takes tens of seconds), else hashed once per file version."""
    from ehrguard.db.lexicon import recorded_checksum

    return _file_sha256(path, recorded_checksum)


def knowledge_checksums(db_path: Path | None = None, *, calibration: str | None = None,
                        profile_calibration: str = "") -> dict[str, str | None]:
    """The SHA-256 of each knowledge file the offline verifier reads: the question models, the calibration in use
    (``calibration``: the method's choice, else the setting; ``profile_calibration``: the one the database's profile
    names), the question banks, the tokenizer and, for a database file, its value lexicon (None: the file is absent)."""
    from ehrguard.db import lexicon_path
    from ehrguard.verify.offline import BANKS_DIR, MODEL_FILES, bank_status
    from ehrguard.verify.offline.calibration import calibration_file
    from ehrguard.verify.offline.embedding import tokenizer_path

    out: dict[str, str | None] = {f"question model {name}": _file_sha256(path) for name, path in MODEL_FILES.items()}
    used = calibration_file(calibration or setting("calibration") or "auto", profile_calibration)
    out["calibration"] = None if used is None else _file_sha256(used)
    for name, entry in sorted(bank_status(BANKS_DIR).items()):
        out[f"question bank {name}"] = entry["sha256"] if entry["state"] == "ok" else None
    tokenizer = tokenizer_path()
    out["tokenizer"] = _file_sha256(tokenizer) if tokenizer else None
    if db_path is not None:
        out["value lexicon"] = _file_sha256(lexicon_path(db_path))
    return out


def make_receipt(reply: Answer, *, candidate_sql: str, database: Database, db_id: str | None, method: str,
                 interface: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The receipt of one answer (which must have a verdict), signed when the deployment has a key."""
    from ehrguard import __version__

    verdict = reply.require_verdict()
    found = getattr(database, "path", None)  # a BigQuery dataset has none
    path = found if isinstance(found, Path) and found.is_file() else None
    profile = _profile(db_id, path)
    result = None
    if reply.result is not None:
        result = {"fingerprint": result_fingerprint(reply.result.columns, reply.result.rows), "row_count": len(reply.result.rows),
                  "columns": list(reply.result.columns), "truncated": bool(reply.result.truncated)}
    body: dict[str, Any] = {
        "format": FORMAT,
        "receipt_id": uuid.uuid4().hex,
        "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "ehrguard_version": __version__,
        "interface": interface,
        "question": reply.question,
        "candidate_sql": candidate_sql,
        "generated": reply.generation is not None,
        "final_sql": verdict.sql,
        "verdict": {"action": verdict.action, "subtype": verdict.subtype, "status": verdict.status, "reason": verdict.reason,
                    "message": verdict.message, "confidence": verdict.confidence,
                    "findings": [{"check": f.check, "severity": f.severity, "message": f.message} for f in verdict.findings]},
        "method": {"name": method, "options": dict(sorted((options or {}).items()))},
        "database": {"name": database.name, "dialect": database.dialect,
                     "profile": db_id or (profile.db_id if path else None),
                     "sha256": database_sha256(path) if path else None},
        "knowledge": knowledge_checksums(path, calibration=(options or {}).get("calibration"),
                                         profile_calibration=profile.calibration),
        "result": result,
    }
    return sign(body, receipt_key())


def _profile(db_id: str | None, path: Path | None) -> DatabaseProfile:
    from ehrguard.profiles import GENERIC, get_profile, profile_for_file

    return get_profile(db_id) if db_id else profile_for_file(path) if path else GENERIC


def sign(body: dict[str, Any], key: bytes | None) -> dict[str, Any]:
    """``body`` with its digest and, given a key, its HMAC signature."""
    core = {k: v for k, v in body.items() if k not in _UNSIGNED}
    payload = canonical(core)
    signature = None
    if key is not None:
        signature = {"algorithm": ALGORITHM, "key_id": key_id(key), "value": hmac.new(key, payload, hashlib.sha256).hexdigest()}
    return {**core, "digest": hashlib.sha256(payload).hexdigest(), "signature": signature}


@dataclass
class ReceiptCheck:
    """What checking a receipt found: each step that passed, each problem, and whether it is signed by the key."""

    passed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    signed: bool = False

    @property
    def ok(self) -> bool:
        return self.signed and not self.problems


def read_receipt(path: str | Path) -> dict[str, Any]:
    """A receipt file, read and checked for its shape."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"Cannot read the receipt {path}: {exc.strerror}.") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path} is not a receipt (not JSON: {exc}). Export one with: ehrguard audit receipt ID") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(f"{path} is not an ehrguard receipt (its format is not {FORMAT}).")
    return data


def check_receipt(receipt: dict[str, Any], key: bytes | None, database: Database | None = None) -> ReceiptCheck:
    """Check a receipt: its digest, its signature under ``key``, and with ``database`` that it is the same database
    (by checksum) and that the final SQL gives rows with the same fingerprint."""
    found = ReceiptCheck()
    core = {k: v for k, v in receipt.items() if k not in _UNSIGNED}
    payload = canonical(core)
    if hashlib.sha256(payload).hexdigest() == receipt.get("digest"):
        found.passed.append("the digest matches the receipt's contents")
    else:
        found.problems.append("the digest does not match: the receipt was changed after it was written")
    signature = receipt.get("signature")
    if not signature:
        found.problems.append("the receipt is unsigned: the deployment had no receipt_key when it was written")
    elif key is None:
        found.problems.append(f"no key to check the signature with (key id {signature.get('key_id')}): set receipt_key or "
                              "receipt_key_file, or pass --key-file")
    elif signature.get("key_id") != key_id(key):
        found.problems.append(f"signed with another key (key id {signature.get('key_id')}, this one is {key_id(key)})")
    elif hmac.compare_digest(hmac.new(key, payload, hashlib.sha256).hexdigest(), str(signature.get("value"))):
        found.signed = True
        found.passed.append(f"the signature is valid (key id {key_id(key)})")
    else:
        found.problems.append("the signature is not valid: the receipt was changed, or signed with another key")
    if database is not None:
        _check_database(receipt, database, found)
    return found


def _check_database(receipt: dict[str, Any], database: Database, found: ReceiptCheck) -> None:
    from ehrguard.errors import EhrguardError

    recorded = (receipt.get("database") or {}).get("sha256")
    path = getattr(database, "path", None)
    actual = database_sha256(path) if isinstance(path, Path) else None
    if recorded and actual == recorded:
        found.passed.append("the database is the one the answer came from (same SHA-256)")
    else:
        found.problems.append("the database is not the one the answer came from (its SHA-256 differs)" if recorded else
                              "the receipt names no database checksum")
    result, sql = receipt.get("result"), receipt.get("final_sql")
    if not result or not sql:
        found.passed.append("no result was recorded, so none was re-run")
        return
    try:
        # One row more than was recorded, unless the recorded result was capped: a new row changes the fingerprint.
        count = int(result.get("row_count", 0))
        rows = database.execute(sql, max_rows=max(count if result.get("truncated") else count + 1, 1))
    except EhrguardError as exc:
        found.problems.append(f"the final SQL no longer runs: {exc}")
        return
    if result_fingerprint(rows.columns, rows.rows) == result.get("fingerprint"):
        found.passed.append(f"the final SQL gives the same {len(rows.rows)} rows (same fingerprint)")
    else:
        found.problems.append("the final SQL gives different rows now (the fingerprint differs)")


__all__ = ["ReceiptCheck", "canonical", "check_receipt", "database_sha256", "key_id", "knowledge_checksums", "make_receipt",
           "read_key_file", "read_receipt", "receipt_key", "result_fingerprint", "sign"]
