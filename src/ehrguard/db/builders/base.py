"""What every builder shares: the progress reporter and the build summary."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class BuildReport:
    """What a build produced: row counts per table, warnings, and how long it took."""

    name: str
    out: Path
    source: str
    tables: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    synthetic: bool = False
    facts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "out": str(self.out),
            "source": self.source,
            "synthetic": self.synthetic,
            "tables": self.tables,
            "facts": self.facts,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
        }


class Progress:
    """Reports build steps; the CLI plugs in rich, tests and the library stay quiet."""

    def __init__(
        self,
        on_step: Callable[[str], None] | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        self._on_step = on_step
        self._on_warning = on_warning
        self.started = time.perf_counter()

    def step(self, message: str) -> None:
        if self._on_step:
            self._on_step(message)

    def warn(self, report: BuildReport, message: str) -> None:
        report.warnings.append(message)
        if self._on_warning:
            self._on_warning(message)
