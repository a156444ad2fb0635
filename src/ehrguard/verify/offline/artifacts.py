"""Compiled knowledge that ships with ehrguard: the template and form banks of each question bank.

The banks are built from public question sets (EHRSQL-2024 train and valid for MIMIC-IV, the EHRSQL
eICU questions; both CC BY 4.0, see ``data/banks/ATTRIBUTION.md``) by ``ehrguard train banks``,
which writes one file per bank and a manifest of their SHA-256 checksums and of the source files
they came from. At run time the verifier reads only these files, so it corrects as well without
the source files as with them. A bank file is a pickle of plain values only (tuples, strings,
numbers; no classes), read with an unpickler that refuses anything else, and checked against the
manifest before it is read. Files are gzip-compressed (no timestamp in the header). Rebuilding from the
same sources reproduces the files byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ehrguard.runtime import dump_plain, load_plain
from ehrguard.verify.offline.forms import Form, FormIndex, Slot
from ehrguard.verify.offline.templates import BANK_LOADERS, Template, TemplateBank

BANKS_DIR = Path(__file__).parent / "data" / "banks"
MANIFEST = "manifest.json"
FORMAT = 1
# The source files of each bank, relative to the data directory.
SOURCES = {
    "ehrsql-2024-mimic-iv": ("ehrsql-2024/mimic_iv/train/data.json", "ehrsql-2024/mimic_iv/train/label.json",
                             "ehrsql-2024/mimic_iv/valid/data.json", "ehrsql-2024/mimic_iv/valid/label.json"),
    "ehrsql-eicu": ("ehrsql/eicu/valid.json",),
}
_warned: set[str] = set()


@dataclass
class CompiledBank:
    """One bank as the verifier uses it."""

    name: str
    templates: TemplateBank
    forms: FormIndex
    sha256: str


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def compile_bank(pairs: list[tuple[str, str]]) -> bytes:
    """The bank file of ``pairs``: their templates and forms as plain values, deterministic for the same pairs."""
    templates = TemplateBank(pairs).templates
    index = FormIndex(pairs)
    forms = index.forms
    body = {
        "format": FORMAT,
        "templates": [(t.source, t.sql, tuple(sorted(t.words))) for t in templates],
        "forms": [(f.masked, f.sql, tuple((s.name, s.kind, s.column) for s in f.slots), tuple(sorted(f.meaning)),
                   tuple(sorted(f.words)), f.number_pattern) for f in forms],
        "aliases": sorted(index.aliases.items()),
    }
    return dump_plain(body)


def _decode(data: bytes, name: str, sha256: str) -> CompiledBank:
    body = load_plain(data)
    if body.get("format") != FORMAT:
        raise ValueError(f"bank format {body.get('format')}, expected {FORMAT}")
    templates = [Template(source, sql, frozenset(words)) for source, sql, words in body["templates"]]
    forms = [Form(masked, sql, tuple(Slot(*s) for s in slots), frozenset(meaning), frozenset(words), tuple(numbers))
             for masked, sql, slots, meaning, words, numbers in body["forms"]]
    index = FormIndex([], forms=forms, aliases=dict(body.get("aliases", ())))  # the swaps are learned again from the forms
    return CompiledBank(name, TemplateBank([], templates=templates), index, sha256)


def read_manifest(folder: Path | None = None) -> dict[str, Any]:
    try:
        return dict(json.loads(((folder or BANKS_DIR) / MANIFEST).read_text()))
    except (OSError, ValueError):
        return {}


def load_compiled(name: str, folder: Path | None = None) -> CompiledBank | None:
    """The shipped bank ``name``, or None (with one warning on stderr) when its file is missing, altered or unreadable."""
    folder = folder or BANKS_DIR
    entry = read_manifest(folder).get(name)
    problem = None
    if entry is None:
        problem = "is not in the manifest"
    else:
        try:
            data = (folder / entry["file"]).read_bytes()
        except OSError:
            problem = "file is missing"
        else:
            if _sha256(data) != entry["sha256"]:
                problem = "file does not match its checksum"
            else:
                try:
                    return _decode(data, name, entry["sha256"])
                except (pickle.UnpicklingError, OSError, ValueError, KeyError, TypeError, EOFError) as exc:
                    problem = f"file cannot be read ({exc})"
    if name not in _warned:
        _warned.add(name)
        print(f"ehrguard: the compiled question bank {name!r} {problem}; corrections from known questions are off for its "
              f"databases. Rebuild it with: ehrguard train banks (needs the EHRSQL files in $EHRGUARD_DATA_DIR).", file=sys.stderr)
    return None


def bank_status(folder: Path | None = None) -> dict[str, dict[str, Any]]:
    """Each shipped bank: its checksum and whether its file is present and intact (for doctor, /healthz, run.json)."""
    folder = folder or BANKS_DIR
    out = {}
    for name, entry in read_manifest(folder).items():
        path = folder / entry["file"]
        state = "ok" if path.is_file() and _sha256(path.read_bytes()) == entry["sha256"] else "missing" if not path.is_file() else "altered"
        out[name] = {"sha256": entry["sha256"], "state": state, "templates": entry["templates"], "forms": entry["forms"]}
    for name in SOURCES:
        out.setdefault(name, {"sha256": None, "state": "missing", "templates": 0, "forms": 0})
    return out


def build_banks(data_dir: Path, out: Path | None = None) -> dict[str, Any]:
    """Compile every bank whose sources are in ``data_dir`` into ``out`` and write the manifest.

    Raises:
        FileNotFoundError: a bank's source files are not all in ``data_dir`` (the message names the first missing one).
    """
    out = out or BANKS_DIR
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {}
    for name, files in SOURCES.items():
        missing = [f for f in files if not (data_dir / f).is_file()]
        if missing:
            raise FileNotFoundError(f"{data_dir / missing[0]} is missing: the {name} bank is built from it.")
        pairs = BANK_LOADERS[name](data_dir)
        data = compile_bank(pairs)
        file = f"{name}.pkl.gz"
        (out / file).write_bytes(data)
        body = _decode(data, name, _sha256(data))
        manifest[name] = {"file": file, "sha256": _sha256(data), "format": FORMAT, "pairs": len(pairs),
                          "templates": len(body.templates), "forms": len(body.forms),
                          "sources": {f: _sha256((data_dir / f).read_bytes()) for f in files}}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest
