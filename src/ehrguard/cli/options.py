"""Options shared by several commands, as decorators (sqlite-utils style)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])

# Piped output keeps wide tables readable instead of folding them to 80 columns.
console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")(f)  # type: ignore[return-value]


def db_option(f: F) -> F:
    return click.option(
        "--db",
        "db_path",
        required=True,
        help="Database file, or the name of a built database in $EHRGUARD_DB_DIR (mimic_iv, eicu, ...).",
    )(f)  # type: ignore[return-value]


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, default=str, ensure_ascii=False))


@contextmanager
def status(message: str, quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """A rich spinner on stderr whose text each build step updates."""
    if quiet or not console.is_terminal:
        yield lambda step: console.print(f"[dim]- {step}[/dim]") if not quiet else None
        return
    with console.status(message) as live:
        yield lambda step: live.update(f"{message}: {step}")
