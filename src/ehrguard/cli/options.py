"""Options shared by several commands, as decorators (sqlite-utils style)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, overload

import click
from rich.console import Console

from ehrguard.config import SETTINGS, parse_setting, setting_value
from ehrguard.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

# Piped output keeps wide tables readable instead of folding them to 80 columns.
console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")(f)


DB_HELP = ("Database file, the name of a built database or link in $EHRGUARD_DB_DIR (mimic_iv, eicu, ...), or a "
           "postgresql://USER@HOST/DB URL.")


FAST_EXIT: list[bool] = []  # set by exit_without_teardown, read by ehrguard.cli.main


def exit_without_teardown() -> None:
    """Ask the entry point to end the process without the interpreter's teardown once the command returns (freeing
    a loaded verifier object by object takes longer than answering): for commands that write only through files
    they have closed and databases they have committed. The exit handlers still run, and the output is flushed."""
    FAST_EXIT.append(True)


@overload
def db_option(f: F, /) -> F: ...


@overload
def db_option(*, help: str = DB_HELP, required: bool = True) -> Callable[[F], F]: ...


def db_option(f: F | None = None, /, *, help: str = DB_HELP, required: bool = True) -> F | Callable[[F], F]:
    """``--db``, passed as ``db_path``: ``@db_option``, or ``@db_option(help=..., required=False)`` for a
    command that says which database it wants."""

    def decorate(fn: F) -> F:
        return click.option("--db", "db_path", required=required, help=help)(fn)

    return decorate(f) if f is not None else decorate


class SettingType(click.ParamType):
    """A flag that overrides a setting, parsed and bounded by the settings table (``ehrguard.config``).

    A bad value, from the flag or from the environment it defaults to, is one line: ``Error: Bad query_timeout ...``.
    """

    def __init__(self, setting: str) -> None:
        self.setting = setting
        self.name = SETTINGS[setting].kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        flag = param.opts[0] if param is not None and param.opts else self.setting
        try:
            return parse_setting(self.setting, value, source=flag)
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from exc


def _setting_default(name: str) -> Any:
    try:
        return setting_value(name)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc


def setting_option(flag: str, setting: str, help: str) -> Callable[[F], F]:
    """An option whose default is a setting's effective value (environment, config file, default) and that is checked the same way."""
    s = SETTINGS[setting]
    return click.option(
        flag,
        type=SettingType(setting),
        default=lambda: _setting_default(setting),
        show_default=s.documented_default(),
        help=f"{help} (env {s.env}; {s.accepts()}).",
    )


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


def known_db_id(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A ``--db-id`` callback: a profile ehrguard knows, or a ``.toml`` profile file (loaded and known from then on);
    an unknown id is an error naming the closest."""
    if value is None:
        return None
    from ehrguard.profiles import resolve_profile

    return resolve_profile(value).db_id
