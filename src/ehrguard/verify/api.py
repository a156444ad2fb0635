"""``ehrguard.verify()``: the one-call Python API of the verification layer."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ehrguard.db.engine import LINK_SUFFIX, Database, locate_database, read_link
from ehrguard.db.limits import check_sql_size
from ehrguard.db.postgres import is_postgres_url
from ehrguard.errors import ConfigError
from ehrguard.runtime import runtime
from ehrguard.verify.methods import Case, DatabaseContext, get_method
from ehrguard.verify.verdict import Verdict


def database_context(db: str | Path | Database | DatabaseContext, db_id: str | None = None) -> DatabaseContext:
    """An open database with its schema and value index, shared through the runtime per file (they are costly to build;
    a rebuilt file is opened anew)."""
    if isinstance(db, DatabaseContext):
        return db
    if is_postgres_url(db):
        return runtime().memo("postgres", (str(db), db_id), lambda: postgres_context(str(db), db_id), close=lambda c: c.db.close())
    if isinstance(db, (str, Path)):
        path = locate_database(db)
        if path.suffix == LINK_SUFFIX:
            link = read_link(path)
            return database_context(link.url, db_id or link.profile)
        return runtime().database_context(path, db_id)
    return DatabaseContext(db, db_id or getattr(db, "name", None) or "unknown")


def postgres_context(url: str, db_id: str | None = None) -> DatabaseContext:
    """A PostgreSQL database with its conventions: ``db_id``'s, else ``mimic_iv_postgres`` when the mimic-code schemas
    (``mimiciv_hosp``, ``mimiciv_icu``) are there, else no fixed conventions in PostgreSQL's dialect."""
    from dataclasses import replace

    from ehrguard.db.postgres import PostgresDatabase
    from ehrguard.db.schema import read_schema
    from ehrguard.profiles import GENERIC, PROFILES, known_profile

    db = PostgresDatabase(url)
    if db_id is not None:
        profile = known_profile(db_id)
    elif {"mimiciv_hosp", "mimiciv_icu"} <= {t.namespace for t in read_schema(db).tables}:
        profile = PROFILES["mimic_iv_postgres"]
    else:
        profile = replace(GENERIC, dialect="postgres")
    return DatabaseContext(db, profile.db_id, profile=profile)


def verify(question: str, sql: str, *, db: str | Path | Database | DatabaseContext, method: str = "offline",
           model: str | None = None, db_id: str | None = None, **options: Any) -> Verdict:
    """Verify a candidate SQL for a question against a database.

    Args:
        question: the user's question, in plain language.
        sql: the candidate SQL from any text-to-SQL model.
        db: a database file, the name of a built database in ``$EHRGUARD_DB_DIR``, or an open database.
        method: a registered method (``offline``, ...; see ``ehrguard bench methods``).
        model: ``provider/model`` for LLM methods.
        db_id: the database's conventions (``mimic_iv``, ``eicu``, ``mimicsql``); guessed from the file name.
        **options: method options (``operating_point="safety-first"``, ...).

    Returns:
        A :class:`~ehrguard.verify.verdict.Verdict`: preserve / correct (with the SQL), ambiguous or
        unanswerable (with a message for the user), plus findings and confidence.

    Raises:
        QueryTooLargeError: the SQL is too long or too deeply nested to check (:func:`~ehrguard.db.limits.check_sql_size`).

    Examples:
        >>> v = verify("How many patients are there?", "SELECT COUNT(subject_id) FROM patients", db="mimic_iv")  # doctest: +SKIP
        >>> v.action, v.sql  # doctest: +SKIP
        ('correct', 'SELECT COUNT(DISTINCT subject_id) FROM patients')
    """
    check_question_size(question)
    check_sql_size(sql)
    return get_method(method, model=model, **options).verify(Case(question, sql, database_context(db, db_id)))


MAX_QUESTION_CHARS = 2_000  # as the REST API's: questions people ask are a few hundred characters at most


def check_question_size(question: str) -> None:
    """Refuse a question longer than anyone asks (a pasted document): reading it would take seconds for nothing.

    Raises:
        ConfigError: the question is longer than MAX_QUESTION_CHARS.
    """
    if len(question) > MAX_QUESTION_CHARS:
        raise ConfigError(f"The question is {len(question):,} characters long; ehrguard reads questions of at most "
                          f"{MAX_QUESTION_CHARS:,}: ask it in fewer words.")


def prefetch(databases: Iterable[str | Path] = (), *, method: str = "offline") -> None:
    """Start loading, in the background, what a first verification waits for longest: the embedding model of the
    offline verifier (opened in a thread; onnxruntime does that without holding the interpreter) and a query worker
    for each of ``databases``. Entry points call it before they import the rest; the verification then finds both
    ready, or waits for what is left. Never raises: whatever fails here fails again, and is reported, where it is used."""
    import threading

    from ehrguard.db.engine import isolation_default
    from ehrguard.errors import EhrguardError

    if method in ("offline", "hybrid"):
        from ehrguard.verify.offline.embedding import load_embedder

        def load() -> None:
            try:
                load_embedder()
            except Exception:  # noqa: BLE001 - raised again, and reported, by the verification that needs it
                pass

        threading.Thread(target=load, name="ehrguard-prefetch-embedder", daemon=True).start()
    if isolation_default():
        from ehrguard.db.worker import start_worker

        for db in databases:
            try:
                path = locate_database(db)
                if path.suffix != LINK_SUFFIX:  # a PostgreSQL server runs its own queries
                    start_worker(path)
            except (EhrguardError, OSError):
                pass


def warm_up(databases: list[Path]) -> dict[str, float | str]:
    """Load what the offline verifier needs (question models, template and form banks, value lexicons)
    for each database now, so that the first real question is not the one that waits seconds for it.

    Returns the seconds each database took, or the error that kept it from warming (it still serves).
    """
    import time
    from concurrent.futures import ThreadPoolExecutor

    from ehrguard.errors import EhrguardError

    def warm(path: Path) -> float | str:
        start = time.perf_counter()
        try:
            # An answerable question with a clean query: it goes through the checks and the search for known forms.
            verify("How many patients were admitted this year?", "SELECT 1", db=path)
            # A value the data lacks, in the first of the profile's value columns this database has: the value check's
            # lookup and the execution of a real table run once (the code paths, whichever column a question reaches).
            ctx = database_context(path)
            for qualified in ctx.profile.value_columns:
                table, column = qualified.rsplit(".", 1)
                info = ctx.schema.table(table)
                if info is not None and info.column(column) is not None:
                    verify(f"How many {table} rows have this {column}?",
                           f"SELECT COUNT(*) FROM {info.name} WHERE {column} = 'no such value'", db=path)
                    break
        except EhrguardError as exc:
            return f"{type(exc).__name__}: {exc}"
        return round(time.perf_counter() - start, 2)

    # One thread per database: one waits on its query worker or its lexicon while another computes.
    with ThreadPoolExecutor(max(1, min(4, len(databases))), thread_name_prefix="ehrguard-warm-up") as pool:
        return dict(zip((p.stem for p in databases), pool.map(warm, databases), strict=True))
