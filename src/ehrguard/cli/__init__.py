"""The ``ehrguard`` command line. Parses, calls the public API, formats. No logic lives here.

The API is :data:`cli` (the click group, for ``CliRunner``) and :func:`main` (the entry point).
The modules are internal: one per command group (:mod:`.db`, :mod:`.sql`, :mod:`.bench`, ...)
and :mod:`.options`, the options several commands share. They import other packages only
through those packages' public names, and import anything heavy inside the command that needs it.
"""

from __future__ import annotations

import sys

import click

from ehrguard import __version__
from ehrguard.cli.bench import bench_group
from ehrguard.cli.clinsql import clinsql_group
from ehrguard.cli.db import db_group
from ehrguard.cli.demo import demo_command
from ehrguard.cli.doctor import doctor_command
from ehrguard.cli.generate import generate_command
from ehrguard.cli.llm import llm_group
from ehrguard.cli.serve import audit_group, mcp_command, serve_command
from ehrguard.cli.sql import sql_group
from ehrguard.cli.train import train_group
from ehrguard.cli.verify import verify_command
from ehrguard.errors import EhrguardError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="ehrguard")
def cli() -> None:
    """ehrguard: a safety layer and benchmarks for question answering over EHR databases.

    Build the EHR databases from the public demos, run SQL on them safely, and check
    that a database reproduces the published benchmark answers.
    """


cli.add_command(db_group)
cli.add_command(bench_group)
cli.add_command(clinsql_group)
cli.add_command(sql_group)
cli.add_command(demo_command)
cli.add_command(doctor_command)
cli.add_command(generate_command)
cli.add_command(llm_group)
cli.add_command(train_group)
cli.add_command(verify_command)
cli.add_command(serve_command)
cli.add_command(audit_group)
cli.add_command(mcp_command)


def main() -> None:
    """Entry point: every EhrguardError becomes one clear message and exit code 1."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except EhrguardError as exc:
        click.secho(f"Error: {exc}", fg="red", err=True)
        sys.exit(1)


__all__ = ["cli", "main"]
