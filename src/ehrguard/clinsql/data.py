"""The ClinSQL data layout: tasks of a split, model outputs, published gradings."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ehrguard.clinsql.rubric import Node, load_tree
from ehrguard.errors import DatasetError

DIFFICULTIES = ("easy", "medium", "hard")


@dataclass
class Task:
    """One ClinSQL task: ``<Scenario>/<difficulty>_level_queries/<id>``."""

    key: str
    scenario: str
    difficulty: str
    path: Path

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def question(self) -> str:
        return (self.path / f"query_{self.id}.txt").read_text().strip()

    @property
    def gold_sql(self) -> str:
        return (self.path / f"sql_{self.id}.sql").read_text()

    @property
    def gold_csv(self) -> Path:
        return self.path / f"result_{self.id}.csv"

    def sql_tree(self) -> Node:
        return load_tree(self.path / "sql_rubric_tree.json")

    def results_tree(self) -> Node:
        return load_tree(self.path / "results_rubric_tree.json")


def load_split(split_dir: str | Path) -> dict[str, Task]:
    """Every task folder of a split, keyed ``<Scenario>/<difficulty>_level_queries/<id>``.

    Raises:
        DatasetError: the folder is missing, empty, or a task lacks a required file.
    """
    root = Path(split_dir)
    if not root.is_dir():
        raise DatasetError(f"No ClinSQL split at {root}; expected <Scenario>/<difficulty>_level_queries/<id>/ folders.")
    tasks: dict[str, Task] = {}
    for d in sorted(root.glob("*/*_level_queries/*")):
        if not d.is_dir():
            continue
        scenario, level = d.parent.parent.name, d.parent.name
        difficulty = level.split("_")[0]
        if difficulty not in DIFFICULTIES:
            raise DatasetError(f"{d}: unknown difficulty folder {level!r}.")
        for required in (f"query_{d.name}.txt", f"sql_{d.name}.sql", "sql_rubric_tree.json", "results_rubric_tree.json"):
            if not (d / required).is_file():
                raise DatasetError(f"{d}: missing {required}.")
        key = f"{scenario}/{level}/{d.name}"
        tasks[key] = Task(key, scenario, difficulty, d)
    if not tasks:
        raise DatasetError(f"{root} holds no ClinSQL tasks.")
    return tasks


def task_key(sample_path: str) -> str:
    """``.../validation/Diagnostic_Procedures/easy_level_queries/001`` -> ``Diagnostic_Procedures/easy_level_queries/001``."""
    parts = sample_path.replace("\\\\", "/").rstrip("/").split("/")
    if len(parts) < 3:
        raise DatasetError(f"Cannot read a task from sample path {sample_path!r}.")
    return "/".join(parts[-3:])


def load_gradings(path: str | Path) -> list[dict[str, Any]]:
    """The per-task evaluations of a published ``*_detailed_grading.json``."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"Cannot read gradings {path}: {exc}") from exc
    evals = data.get("detailed_evaluations") if isinstance(data, dict) else None
    if not isinstance(evals, list):
        raise DatasetError(f"{path}: expected an object with a 'detailed_evaluations' list.")
    for i, e in enumerate(evals):
        for k in ("sample_path", "sql_evaluations", "results_evaluations"):
            if k not in e:
                raise DatasetError(f"{path}: evaluation {i} lacks {k!r}.")
    return evals
