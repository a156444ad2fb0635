"""``ehrguard doctor``: what is installed and what to run to fix what is not."""

from __future__ import annotations

import click

from ehrguard.cli.options import console, echo_json, json_option


@click.command("doctor")
@json_option
def doctor_command(as_json: bool) -> None:
    """What is installed, which databases are built, which artifacts the verifier has, and how to fix each problem."""
    from rich.table import Table

    from ehrguard.doctor import as_dicts, diagnose, healthy

    checks = diagnose()
    if as_json:
        echo_json({"healthy": healthy(checks), "checks": as_dicts(checks)})
    else:
        table = Table("", "check", "state", "found", "to fix")
        for c in checks:
            table.add_row(c.group, c.name, c.state, c.detail, c.fix)
        console.print(table)
        console.print("healthy: the verifier has everything it ships with." if healthy(checks) else
                      "NOT healthy: the verifier is missing files it ships with (see 'to fix').")
    if not healthy(checks):
        raise SystemExit(1)
