"""The registry of verification methods and what a method is given.

A method is any object with a ``name``, a ``describe()`` (its configuration, prompt hashes
included, for run logs) and ``verify(case) -> Verdict``. Register a factory with
:func:`register_method`; :func:`get_method` builds one by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ehrguard.errors import ConfigError
from ehrguard.verify.verdict import Verdict

if TYPE_CHECKING:
    from ehrguard.db.engine import Database
    from ehrguard.db.schema import Schema
    from ehrguard.db.values import ValueIndex


class DatabaseContext:
    """An open database plus what methods derive from it once (schema, value index).

    Shared by every item of a run; the derived parts are built on first use, once.
    """

    def __init__(self, db: Database, db_id: str, path: str | Path | None = None) -> None:
        self.db = db
        self.db_id = db_id
        self.path = Path(path) if path else None
        self._lock = threading.Lock()

    @cached_property
    def schema(self) -> Schema:
        from ehrguard.db.schema import read_schema

        with self._lock:
            return read_schema(self.db)

    @cached_property
    def values(self) -> ValueIndex:
        from ehrguard.db.values import ValueIndex

        return ValueIndex(self.db)  # loads each column lazily, thread-safe


@dataclass
class Case:
    """What a method decides on: a question, a candidate SQL, and the database they are about.

    ``expected`` is filled only by the benchmark runner (the item's labels); methods must
    not read it, except the ``oracle`` sanity baseline whose whole point is to use it.
    """

    question: str
    sql: str
    context: DatabaseContext
    expected: Any = None
    options: dict[str, Any] = field(default_factory=dict)


class Method(Protocol):
    name: str

    def describe(self) -> dict[str, Any]: ...

    def verify(self, case: Case) -> Verdict: ...


MethodFactory = Callable[..., Method]
METHODS: dict[str, MethodFactory] = {}
DESCRIPTIONS: dict[str, str] = {}


def register_method(name: str, description: str) -> Callable[[MethodFactory], MethodFactory]:
    """Decorator: make a method factory available under ``name`` (``factory(model=None, **options)``)."""

    def decorate(factory: MethodFactory) -> MethodFactory:
        METHODS[name] = factory
        DESCRIPTIONS[name] = description
        return factory

    return decorate


def get_method(name: str, model: str | None = None, **options: Any) -> Method:
    """Build the method registered as ``name``.

    Raises:
        ConfigError: no such method.
    """
    _load_builtin_methods()
    if name not in METHODS:
        raise ConfigError(f"Unknown method {name!r}. Available: {', '.join(sorted(METHODS))}.")
    return METHODS[name](model=model, **options)


def available_methods() -> dict[str, str]:
    _load_builtin_methods()
    return dict(sorted(DESCRIPTIONS.items()))


def _load_builtin_methods() -> None:
    # Importing the modules registers their methods.
    import ehrguard.verify.baselines
    import ehrguard.verify.hybrid
    import ehrguard.verify.llm_methods
    import ehrguard.verify.offline.verifier  # noqa: F401
