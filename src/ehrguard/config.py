"""Settings: one table of name, default and help that drives the CLI, the environment and the docs.

Every setting can come from a command-line flag, an ``EHRGUARD_<NAME>`` environment
variable, or its default, in that order of precedence.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ehrguard"


@dataclass(frozen=True)
class Setting:
    name: str
    default: str
    help: str

    @property
    def env(self) -> str:
        return "EHRGUARD_" + self.name.upper()

    def value(self) -> str:
        return os.environ.get(self.env) or self.default


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting(
            "data_dir",
            str(_user_cache_dir() / "data"),
            "Where source datasets live (the demos from PhysioNet, EHRSQL, SCARE, ClinSQL).",
        ),
        Setting(
            "db_dir",
            str(_user_cache_dir() / "databases"),
            "Where built databases are written and looked up by name (mimic_iv.sqlite, ...).",
        ),
        Setting(
            "query_timeout",
            "60",
            "Wall-clock limit of one query in seconds (SCARE and EHRSQL use 60).",
        ),
        Setting("max_rows", "10000", "Row cap of one query result; a capped result is flagged truncated."),
    )
}


def setting(name: str) -> str:
    """Return the effective value of a setting (environment first, then default)."""
    return SETTINGS[name].value()


def data_dir() -> Path:
    return Path(setting("data_dir")).expanduser()


def db_dir() -> Path:
    return Path(setting("db_dir")).expanduser()


# Folder names of the public sources inside the data directory, as PhysioNet and the
# benchmark repositories name them.
SOURCE_FOLDERS = {
    "mimic_iv": "mimic-iv-demo-2.2",
    "mimic_iv_raw": "mimic-iv-demo-2.2",
    "eicu": "eicu-demo-2.0.1",
    "mimicsql": "mimic-iii-demo-1.4",
}
