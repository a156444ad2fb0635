"""The ``ehrguard`` command line. Parses, calls the public API, formats. No logic lives here.

The API is :data:`cli` (the click group, for ``CliRunner``) and :func:`main` (the entry point).
The modules are internal: one per command group (:mod:`.db`, :mod:`.sql`, :mod:`.bench`, ...)
and :mod:`.options`, the options several commands share. They import other packages only
through those packages' public names, and import anything heavy inside the command that needs it.
"""

from __future__ import annotations

import atexit
import os
import sys

import click

from ehrguard import __version__
from ehrguard.cli.options import FAST_EXIT
from ehrguard.errors import EhrguardError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# Each command and where it lives, imported only when it runs (or when ``--help`` lists them all): a command then
# loads none of the libraries the others need.
COMMANDS = {
    "ask": "ehrguard.cli.ask:ask_command",
    "db": "ehrguard.cli.db:db_group",
    "bench": "ehrguard.cli.bench:bench_group",
    "clinsql": "ehrguard.cli.clinsql:clinsql_group",
    "sql": "ehrguard.cli.sql:sql_group",
    "demo": "ehrguard.cli.demo:demo_command",
    "doctor": "ehrguard.cli.doctor:doctor_command",
    "generate": "ehrguard.cli.generate:generate_command",
    "llm": "ehrguard.cli.llm:llm_group",
    "train": "ehrguard.cli.train:train_group",
    "verify": "ehrguard.cli.verify:verify_command",
    "serve": "ehrguard.cli.serve:serve_command",
    "audit": "ehrguard.cli.serve:audit_group",
    "mcp": "ehrguard.cli.serve:mcp_command",
}


class _LazyGroup(click.Group):
    """A group whose commands are imported by name, on first use (click's lazy-loading pattern)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            import importlib

            module, attr = COMMANDS[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="ehrguard")
def cli() -> None:
    """ehrguard: a safety layer and benchmarks for question answering over EHR databases.

    Build the EHR databases from the public demos, run SQL on them safely, and check
    that a database reproduces the published benchmark answers.
    """
    from ehrguard.config import check_settings

    try:
        check_settings()  # a bad setting fails here, in one line, whichever command would (or would not) have read it
    except EhrguardError as exc:
        raise click.ClickException(str(exc)) from None


def main() -> None:
    """Entry point: every EhrguardError becomes one clear message and exit code 1."""
    code = 0
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        code = 130
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except EhrguardError as exc:
        click.secho(f"Error: {exc}", fg="red", err=True)
        code = 1
    except SystemExit as exc:  # click's own exits (it ends a broken pipe this way): the same way out as the others
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except OSError as exc:  # a file the command reads or writes (--out in a folder that does not exist, a full disk)
        if isinstance(exc, BrokenPipeError):
            code = 0
        else:
            where = f" {exc.filename}" if exc.filename else ""
            hint = " Check that the folder exists and that you may write there." if exc.filename else ""
            click.secho(f"Error: cannot read or write{where}: {exc.strerror or exc}.{hint}", fg="red", err=True)
            code = 1
    if FAST_EXIT:  # also after an error: a model's threads still loading must not be torn down under the interpreter
        atexit._run_exitfuncs()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:  # the reader went away (`| head`): nothing left to say to it
            pass
        os._exit(code)
    sys.exit(code)


__all__ = ["cli", "main"]
