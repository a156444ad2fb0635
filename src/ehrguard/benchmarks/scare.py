"""The SCARE benchmark format: loading and validating correction-data items."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ehrguard.errors import DatasetError
from ehrguard.evaluation.scare_metrics import AMBIGUOUS_TYPES, ANSWERABLE_TYPES, CATEGORIES, UNANSWERABLE_TYPES

DB_IDS = ("mimic_iv", "eicu", "mimicsql")
REQUIRED = {
    "db_id": str, "id": str, "type": str, "template": str, "question": str, "gt_sql": str, "pred_sql": str,
    "gt_exe": str, "pred_exe": str, "exec_acc": bool, "generator_name": str, "sampled_category": str,
}


@dataclass(frozen=True)
class ScareItem:
    """One SCARE item: a question, a candidate SQL from an upstream generator, and what is expected."""

    db_id: str
    id: str
    type: str
    template: str
    question: str
    gt_sql: str
    pred_sql: str
    gt_exe: str
    pred_exe: str
    exec_acc: bool
    generator_name: str
    sampled_category: str

    @property
    def key(self) -> str:
        """Unique per item: a question recurs with candidates from several generators."""
        return f"{self.db_id}:{self.generator_name}:{self.id}"

    @property
    def answerable(self) -> bool:
        return self.type in ANSWERABLE_TYPES


def _validate(raw: Any, where: str) -> ScareItem:
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: expected an object, got {type(raw).__name__}.")
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise DatasetError(f"{where}: missing field(s) {', '.join(missing)}. Is this a SCARE correction-data file?")
    for key, kind in REQUIRED.items():
        if not isinstance(raw[key], kind):
            raise DatasetError(f"{where}: field {key!r} should be {kind.__name__}, got {type(raw[key]).__name__}.")
    if raw["db_id"] not in DB_IDS:
        raise DatasetError(f"{where}: db_id {raw['db_id']!r} is not one of {', '.join(DB_IDS)}.")
    if raw["sampled_category"] not in CATEGORIES:
        raise DatasetError(f"{where}: sampled_category {raw['sampled_category']!r} is not one of {', '.join(CATEGORIES)}.")
    known = ANSWERABLE_TYPES + AMBIGUOUS_TYPES + UNANSWERABLE_TYPES
    if raw["type"] not in known:
        raise DatasetError(f"{where}: type {raw['type']!r} is not one of {', '.join(known)}.")
    answerable = raw["type"] in ANSWERABLE_TYPES
    if answerable == (raw["gt_sql"] == "null"):
        raise DatasetError(f"{where}: type {raw['type']!r} does not agree with gt_sql "
                           f"({'null' if raw['gt_sql'] == 'null' else 'a query'}).")
    return ScareItem(**{k: raw[k] for k in REQUIRED})


def load_scare(paths: list[str | Path] | str | Path) -> list[ScareItem]:
    """Load and validate one or more SCARE correction-data JSON files (each a JSON list).

    Raises:
        DatasetError: a file is missing, not JSON, or an item is malformed (the error names
            the file and the item's index).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    items: list[ScareItem] = []
    seen: set[str] = set()
    for path in map(Path, paths):
        if not path.is_file():
            raise DatasetError(f"No SCARE file at {path}.")
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path} is not valid JSON: {exc}") from exc
        if not isinstance(data, list):
            raise DatasetError(f"{path}: a SCARE file is a JSON list of items.")
        for i, raw in enumerate(data):
            item = _validate(raw, f"{path} item {i}")
            if item.key in seen:
                raise DatasetError(f"{path} item {i}: duplicate item {item.key}.")
            seen.add(item.key)
            items.append(item)
    return items
