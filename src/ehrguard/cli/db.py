"""``ehrguard db``: build, check, inspect databases."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from rich.table import Table

from ehrguard.cli.options import console, db_option, echo_json, json_option, known_db_id, status
from ehrguard.config import db_dir
from ehrguard.db import (
    BUILDERS,
    Progress,
    ValueIndex,
    build_database,
    check_fidelity,
    connect_database,
    load_ehrsql_split,
    locate_database,
    open_database,
    read_schema,
)
from ehrguard.errors import ConfigError


@click.group("db")
def db_group() -> None:
    """Build, check and inspect the EHR databases."""


@db_group.command("list")
@json_option
def list_command(as_json: bool) -> None:
    """List the databases ehrguard can build, and which are built in $EHRGUARD_DB_DIR."""
    rows = []
    for b in BUILDERS.values():
        built = db_dir() / f"{b.name}{b.suffix}"
        rows.append({"name": b.name, "engine": b.engine, "description": b.description, "built": str(built) if built.is_file() else None})
    if as_json:
        echo_json(rows)
        return
    t = Table("name", "engine", "built", "description")
    for r in rows:
        t.add_row(r["name"], r["engine"], r["built"] or "-", r["description"])
    console.print(t)


@db_group.command("build")
@click.argument("name", type=click.Choice(sorted(BUILDERS)))
@click.option("--source", type=click.Path(path_type=Path), help="Unpacked source folder (default: $EHRGUARD_DATA_DIR/<demo folder>).")
@click.option("--out", type=click.Path(path_type=Path), help="Output file (default: $EHRGUARD_DB_DIR/NAME.sqlite|.duckdb).")
@click.option("--download", is_flag=True, help="Fetch the open demo from PhysioNet into $EHRGUARD_DATA_DIR first (needs internet).")
@click.option("--force", is_flag=True, help="Replace --out even when it is not a database this builder made.")
@click.option("--target", default=None, metavar="postgresql://USER@HOST/DB",
              help="Also load it into PostgreSQL (mimic_iv_raw: the mimic-code layout, mimiciv_hosp / mimiciv_icu / ...); "
                   "an existing --out build without --source is loaded as it is.")
@json_option
def build_command(name: str, source: Path | None, out: Path | None, download: bool, force: bool, target: str | None,
                  as_json: bool) -> None:
    """Build database NAME from its public source, atomically (and with --target, load it into PostgreSQL)."""
    builder = BUILDERS[name]
    if target is not None:
        _build_into_postgres(name, builder.suffix, source, out, target, as_json)
        return
    out = out or db_dir() / f"{name}{builder.suffix}"
    if download:
        from ehrguard.db import download_demo

        source = download_demo(name, progress=lambda m: console.print(f"[dim]{m}[/dim]"))
    with status(f"Building {name}", quiet=as_json) as step:
        report = build_database(
            name,
            source=source,
            out=out,
            force=force,
            progress=Progress(on_step=step, on_warning=lambda m: console.print(f"[bold yellow]WARNING[/bold yellow] {m}")),
        )
    if as_json:
        echo_json(report.to_dict())
        return
    t = Table("table", "rows", title=f"{name} -> {report.out} ({report.seconds:.1f} s)")
    for table_name, n in report.tables.items():
        t.add_row(table_name, f"{n:,}")
    console.print(t)
    for k, v in report.facts.items():
        console.print(f"{k}: {v}")
    if report.synthetic:
        console.print("[bold]SYNTHETIC data[/bold]: generated from seeded code, not real patients.")


def _build_into_postgres(name: str, suffix: str, source: Path | None, out: Path | None, target: str, as_json: bool) -> None:
    """``db build NAME --target URL``: the DuckDB build (kept at --out when given), then every table loaded with COPY."""
    import tempfile

    from ehrguard.db import is_postgres_url, load_into_postgres

    if not is_postgres_url(target):
        raise ConfigError(f"--target takes a postgresql:// URL, not {target!r} (e.g. postgresql://ehrguard@localhost/mimic).")
    if suffix != ".duckdb":
        raise ConfigError(f"{name} builds a SQLite file; --target loads DuckDB builds into PostgreSQL: use mimic_iv_raw.")
    with tempfile.TemporaryDirectory() as tmp:
        built = out or Path(tmp) / f"{name}{suffix}"
        with status(f"Building {name}", quiet=as_json) as step:
            if not (out is not None and out.is_file() and source is None):  # an existing --out build is loaded as it is
                build_database(name, source=source, out=built, force=True, progress=Progress(on_step=step))
            counts = load_into_postgres(built, target, Progress(on_step=step))
    from ehrguard.db import redact_url

    if as_json:
        echo_json({"target": redact_url(target), "tables": counts})
        return
    t = Table("table", "rows", title=f"{name} -> {redact_url(target)}")
    for table_name, n in counts.items():
        t.add_row(table_name, f"{n:,}")
    console.print(t)


@db_group.command("check")
@click.argument("name", type=click.Choice(["mimic_iv"]))
@db_option
@click.option("--ehrsql", "split_dir", required=True, type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="An EHRSQL-2024 split folder (data.json, label.json, answer.json).")
@click.option("--report", "report_path", type=click.Path(path_type=Path), help="Also write the full report (with mismatches) as JSON here.")
@json_option
def check_command(name: str, db_path: str, split_dir: Path, report_path: Path | None, as_json: bool) -> None:
    """Measure fidelity: the share of published EHRSQL answers the database reproduces, per table."""
    db = connect_database(db_path)
    from rich.progress import Progress as Bar

    _, labels, _ = load_ehrsql_split(split_dir)
    with Bar(console=console, disable=as_json, transient=True) as bar:
        task = bar.add_task("executing gold SQL", total=len(labels))
        report = check_fidelity(db, split_dir, on_item=lambda: bar.advance(task))
    data = report.to_dict()
    if report_path:
        report_path.write_text(json.dumps(data, indent=2))
    if as_json:
        data.pop("mismatches")
        echo_json(data)
        return
    t = Table("table", "reproduced", "questions", "share", title=f"{name} fidelity on {split_dir}")
    for table_name, v in data["per_table"].items():
        t.add_row(table_name, str(v["reproduced"]), str(v["total"]), f"{100 * v['share']:.1f}%")
    console.print(t)
    click.echo(f"overall: {report.reproduced}/{report.total} ({100 * report.share:.2f}%)")
    for focus, v in data["without_table"].items():
        if v["total"]:
            click.echo(f"not touching {focus}: {v['reproduced']}/{v['total']} ({100 * v['share']:.2f}%)")


@db_group.command("schema")
@db_option
@click.option("--format", "fmt", type=click.Choice(["ddl", "compact", "json"]), default="compact", show_default=True)
@click.option("--table", default=None, help="Only this table (an unknown one is an error naming the closest).")
@json_option
def schema_command(db_path: str, fmt: str, table: str | None, as_json: bool) -> None:
    """Print the schema of a database (DDL for prompts, one line per table, or JSON)."""
    schema = read_schema(connect_database(db_path))
    if table is not None:
        schema = schema.only(table)
    if fmt == "json" or as_json:
        echo_json(schema.to_dict())
    elif fmt == "ddl":
        click.echo(schema.render_ddl())
    else:
        click.echo(schema.render_compact())


@db_group.command("values")
@db_option
@click.argument("table")
@click.argument("column")
@click.argument("literal")
@click.option("-k", default=5, show_default=True, help="How many nearest values to show.")
@json_option
def values_command(db_path: str, table: str, column: str, literal: str, k: int, as_json: bool) -> None:
    """Does LITERAL exist in TABLE.COLUMN? If not, show the nearest values. An unknown table or column is an error."""
    db = connect_database(db_path)
    read_schema(db).require_column(table, column)
    lookup = ValueIndex(db).lookup(table, column, literal, k=k)
    if as_json:
        echo_json(lookup.to_dict())
        return
    if not lookup.indexed:
        click.echo(f"{table}.{column} is not an indexable text column of this database.")
    elif lookup.exists:
        click.echo(f"'{literal}' exists in {table}.{column}.")
    else:
        click.echo(f"'{literal}' is not a value of {table}.{column}." + (" Nearest:" if lookup.nearest else " No value is close to it."))
        for m in lookup.nearest:
            click.echo(f"  {m.score:.2f}  {m.value}")


@db_group.command("profile")
@db_option
@click.option("--name", "db_id", default=None, help="The profile's db_id (default: the database's name).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the TOML here (default: stdout).")
def profile_command(db_path: str, db_id: str | None, out: Path | None) -> None:
    """Draft a profile (TOML) of a database from its schema and its data: entities and their ids, time columns, value
    columns, the keys its schema does not declare, its "now". Edit it, then pass --db-id FILE.toml."""
    from ehrguard.profile_draft import draft_profile
    from ehrguard.profiles import profile_to_toml

    db = connect_database(db_path)
    profile = draft_profile(db, db_id or re.sub(r"\W+", "_", db.name).strip("_").lower() or "my_database")
    text = profile_to_toml(profile, header="A draft from `ehrguard db profile`: check every line against what your tables mean.\n"
                           "Then: ehrguard verify --db DB --db-id THIS_FILE.toml ...")
    if out:
        out.write_text(text)
        console.print(f"Wrote {out}: {len(profile.entities)} entities, {len(profile.time_columns)} time columns, "
                      f"{len(profile.value_columns)} value columns, {len(profile.foreign_keys)} undeclared keys, "
                      f"now {profile.now or 'the clock'}")
    else:
        click.echo(text, nl=False)


@db_group.command("link")
@click.argument("name")
@click.argument("url", metavar="postgresql://USER@HOST/DB")
@click.option("--db-id", "profile", default=None, callback=known_db_id,
              help="Its conventions (mimic_iv_postgres, a .toml profile's id, ...); default: detected from its schemas.")
def link_command(name: str, url: str, profile: str | None) -> None:
    """Name a PostgreSQL database in $EHRGUARD_DB_DIR (NAME.postgres), so that `serve`, `mcp`, the benchmarks and every
    --db NAME reach it like a built file. Keep passwords in ~/.pgpass or PGPASSWORD rather than in the URL."""
    from ehrguard.db import Link, is_postgres_url, redact_url, write_link
    from ehrguard.verify import postgres_context

    if not is_postgres_url(url):
        raise ConfigError(f"Not a PostgreSQL URL: {url!r}; write postgresql://USER@HOST:PORT/DB.")
    context = postgres_context(url, profile)  # connects: a link that cannot be reached is not written
    tables = len(context.schema.tables)
    context.db.close()
    path = write_link(name, Link(url, profile))
    console.print(f"Wrote {path}: {redact_url(url)}, {tables} tables, conventions {context.profile.db_id}. "
                  f"Use it as --db {name}.")


@db_group.command("lexicon")
@db_option
@click.option("--db-id", default=None, callback=known_db_id,
              help="The database's conventions (mimic_iv, eicu, ...): guessed from the file name.")
def lexicon_command(db_path: str, db_id: str | None) -> None:
    """Write the value lexicon beside a database (done by `db build`; run it for a database built elsewhere or changed)."""
    from ehrguard.db import build_lexicon
    from ehrguard.profiles import known_profile, profile_for_file

    path = locate_database(db_path)
    profile = known_profile(db_id) if db_id else profile_for_file(path)
    if not profile.value_columns:
        raise ConfigError(f"The {profile.db_id} conventions name no value columns; pass --db-id (mimic_iv, eicu, ...).")
    db = open_database(path, isolated=False)
    out = build_lexicon(db, [(c.rsplit(".", 1)[0], c.rsplit(".", 1)[1]) for c in profile.value_columns])
    console.print(f"{out}: {len(profile.value_columns)} columns, {out.stat().st_size / 2**20:.1f} MiB")
