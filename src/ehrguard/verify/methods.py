"""The registry of verification methods and what a method is given.

A method is any object with a ``name``, a ``describe()`` (its configuration, prompt hashes
included, for run logs) and ``verify(case) -> Verdict``. Register a factory with
:func:`register_method`; :func:`get_method` builds one by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ehrguard.errors import ConfigError
from ehrguard.lazy import cached_property
from ehrguard.registry import Registry
from ehrguard.verify.verdict import Verdict

if TYPE_CHECKING:
    from ehrguard.db.engine import Database
    from ehrguard.db.schema import Schema
    from ehrguard.db.values import ValueIndex
    from ehrguard.profiles import DatabaseProfile

T = TypeVar("T")

class DatabaseContext:
    """An open database plus what methods derive from it once (schema, value index).

    Shared by every item of a run; the derived parts are built on first use, once.
    """

    def __init__(self, db: Database, db_id: str, path: str | Path | None = None, *, profile: DatabaseProfile | None = None) -> None:
        self.db = db
        self.db_id = db_id if profile is None else profile.db_id
        self._profile = profile
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        self._derived: dict[Hashable, Any] = {}
        self._derived_lock = threading.RLock()  # a derived value may be built from another one

    def derived(self, key: Hashable, build: Callable[[], T]) -> T:
        """Something derived from this database (a prompt's schema text, ...), built once and kept with the open database."""
        with self._derived_lock:
            if key not in self._derived:
                self._derived[key] = build()
            return self._derived[key]

    @cached_property
    def profile(self) -> DatabaseProfile:
        """The database's conventions (its "now", entities, id columns, ...): the one it was opened with, else the
        built-in profile of ``db_id``."""
        from ehrguard.profiles import get_profile

        return self._profile if self._profile is not None else get_profile(self.db_id)

    @cached_property
    def schema(self) -> Schema:
        from ehrguard.db.schema import read_schema

        with self._lock:
            return read_schema(self.db).with_keys(self.profile.key_pairs())

    @cached_property
    def values(self) -> ValueIndex:
        from ehrguard.db.values import ValueIndex

        columns = [(t, c) for t, c in (q.rsplit(".", 1) for q in self.profile.value_columns)]
        # loads each column lazily, thread-safe; writes the lexicon of the profile's value columns when it is missing or stale
        return ValueIndex(self.db, lexicon_columns=columns)


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


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its factory and what the registry checks before calling it."""

    factory: MethodFactory
    options: frozenset[str] | None = None  # the option names it takes; None: the factory checks its own
    refuse_model: str | None = None  # a method without an LLM: the message when a model is given anyway

    def build(self, name: str, model: str | None, options: dict[str, Any]) -> Method:
        # The model is refused before the options are read: `bench scare --model` adds a call_log option.
        if model and self.refuse_model:
            raise ConfigError(self.refuse_model)
        if self.options is not None:
            unknown = set(options) - self.options
            if unknown:
                raise ConfigError(f"{name} options are {', '.join(sorted(self.options))}; got {', '.join(sorted(unknown))}.")
        return self.factory(model=model, **options)


METHODS: Registry[MethodSpec] = Registry("method", sort=True)


def register_method(name: str, description: str, *, options: Iterable[str] | None = None,
                    refuse_model: str | None = None) -> Callable[[MethodFactory], MethodFactory]:
    """Decorator: make a method factory available under ``name`` (``factory(model=None, **options)``).

    Args:
        name: the method's id (``--method NAME``).
        description: one line for ``ehrguard bench methods``.
        options: the option names the factory accepts; any other is refused before the factory
            runs, as "NAME options are a, b; got x.". None leaves the check to the factory.
        refuse_model: for a method that uses no LLM, the message to refuse a model with.

    Raises:
        ConfigError: a method is already registered as ``name``.
    """

    def decorate(factory: MethodFactory) -> MethodFactory:
        allowed = frozenset(options) if options is not None else None
        METHODS.register(name, MethodSpec(factory, allowed, refuse_model), description=description)
        return factory

    return decorate


def get_method(name: str, model: str | None = None, **options: Any) -> Method:
    """Build the method registered as ``name``.

    Raises:
        ConfigError: no such method (the message suggests the closest name), or a model or an
            option the method does not take.
    """
    _load_builtin_methods(name)
    return METHODS.get(name).build(name, model, options)


def method_uses_model(name: str) -> bool:
    """Whether the method ``name`` can take an LLM (``offline`` cannot: a model given with it serves generation only)."""
    _load_builtin_methods(name)
    return METHODS.get(name).refuse_model is None


def available_methods() -> dict[str, str]:
    """Every method's name and one-line description, by name."""
    _load_builtin_methods()
    return METHODS.describe()


# The built-in methods whose module is known by name: asking for one imports only its module (the LLM methods'
# libraries stay unloaded for an offline verification). Any other name imports every built-in module.
_BUILTIN_MODULES = {"offline": "ehrguard.verify.offline.verifier", "hybrid": "ehrguard.verify.hybrid",
                    "preserve_all": "ehrguard.verify.baselines", "abstain_all": "ehrguard.verify.baselines",
                    "oracle": "ehrguard.verify.baselines"}


def _load_builtin_methods(name: str | None = None) -> None:
    """Import the module that registers the built-in method ``name``; all of them for None or another name."""
    import importlib

    if name in _BUILTIN_MODULES:
        importlib.import_module(_BUILTIN_MODULES[name])
        return
    for module in ("ehrguard.verify.baselines", "ehrguard.verify.hybrid", "ehrguard.verify.llm_methods",
                   "ehrguard.verify.offline.verifier"):
        importlib.import_module(module)
