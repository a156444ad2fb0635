"""Database profiles: everything ehrguard knows about one kind of database, in one frozen object.

A profile names a database's conventions: its SQL dialect, its "now" (a fixed instant, or the
real clock), the entities questions count (patients, admissions, ICU stays) with their tables
and id columns, its time columns, which text columns hold values worth indexing, the file a
build writes and the folder it reads, the question bank its known forms come from, the rule
the benchmarks compare answers with, and the calibrated confidence fitted for its layout. Every
module that needs such a fact asks the profile of the database at hand
(``DatabaseContext.profile``) instead of testing a database's name.

Adding a database means adding one profile: to :data:`PROFILES` here, or in a TOML file
(:func:`load_profile`) for a schema ehrguard has never seen::

    db_id = "st_marys"
    dialect = "sqlite"
    now = "clock"                     # or a fixed instant: "2100-12-31 23:59:00"
    file_name = "st_marys.sqlite"
    time_columns = ["encounters.start_time", "labs.taken_at"]
    value_columns = ["labs.test_name", "meds.drug"]
    foreign_keys = ["labs.test_id -> lab_tests.test_id"]   # keys the schema does not declare
    calibration = "st_marys_calibration.json"   # optional: a fit from `ehrguard train calibration` on graded runs here

    [[entities]]
    name = "patient"
    table = "people"
    id_column = "mrn"
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

EHRSQL_NOW = "2100-12-31 23:59:00"
"""EHRSQL and SCARE shift every timestamp into the years up to 2100 and fix "now" at this instant."""

AnswerRule = Literal["ehrsql", "mimicsql"]
"""How the benchmarks compare a predicted answer with the gold one (see ``evaluation.execution_match.answers_match``)."""

EntityName = Literal["patient", "admission", "stay"]
_ENTITY_NAMES = ("patient", "admission", "stay")


@dataclass(frozen=True)
class Entity:
    """Something questions count or name by id: a patient, a hospital admission, an ICU stay."""

    name: EntityName
    table: str
    id_column: str


@dataclass(frozen=True)
class DatabaseProfile:
    """One database's conventions. See the module docstring for the TOML form."""

    db_id: str
    description: str = ""
    dialect: str = "sqlite"  # a sqlglot dialect name
    now: str | None = None  # a fixed "YYYY-MM-DD HH:MM:SS", or None for the machine clock
    entities: tuple[Entity, ...] = ()
    # Id columns that identify people (or their visits) when counted: "how many patients" needs DISTINCT over them.
    person_ids: tuple[str, ...] = ()
    time_columns: tuple[str, ...] = ()  # "table.column"
    value_columns: tuple[str, ...] = ()  # "table.column" text columns worth indexing; empty: every text column
    # Keys the database does not declare, "table.column -> table.column" (a code to its dictionary, a visit's id to the
    # visits' table): the checks that read a code by its dictionary's names, or a table by the one it refers to, use them
    # as they use declared foreign keys.
    foreign_keys: tuple[str, ...] = ()
    file_name: str = ""  # what `ehrguard db build` writes and the benchmarks look for
    source_folder: str = ""  # the public source's folder inside the data directory
    builder: str = ""  # the builder that makes it (`ehrguard db build NAME`)
    bank: str = ""  # the question bank its known forms come from (see verify.offline.templates.BANK_LOADERS)
    answer_rule: AnswerRule = "ehrsql"
    # The calibrated confidence fitted for this layout: a shipped one by name ("mimic_code": fitted on real models'
    # graded SQL over the mimic-code layout) or a file from `ehrguard train calibration`; empty: the default one.
    calibration: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def value_columns_by_table(self) -> dict[str, tuple[str, ...]]:
        """``value_columns`` grouped by table, in order."""
        out: dict[str, tuple[str, ...]] = {}
        for qualified in self.value_columns:
            table, column = qualified.rsplit(".", 1)
            out[table] = (*out.get(table, ()), column)
        return out

    def entity(self, name: EntityName) -> Entity | None:
        return next((e for e in self.entities if e.name == name), None)

    def key_pairs(self) -> tuple[KeyPair, ...]:
        """``foreign_keys`` read: ((table, column), (referred table, column)) each."""
        return tuple(pair for key in self.foreign_keys if (pair := _key_sides(key)) is not None)

    def as_queried(self) -> DatabaseProfile:
        """This profile with its entities' tables and its time columns named as a query's parse tree names them: the
        table's own name, without its schema or project (``mimiciv_hosp.admissions`` -> ``admissions``), so that the
        checks compare them with the tables a query reads on every layout."""
        return replace(self, entities=tuple(replace(e, table=_own_name(e.table)) for e in self.entities),
                       time_columns=tuple(f"{_own_name(t)}.{c}" for t, c in (q.rsplit(".", 1) for q in self.time_columns)))

    @property
    def fixed_now(self) -> bool:
        """The database has its own "now": questions about "this year" or "today" mean that instant, not the clock."""
        return self.now is not None


def _own_name(table: str) -> str:
    return table.rsplit(".", 1)[-1]


def _entities(*triples: tuple[EntityName, str, str]) -> tuple[Entity, ...]:
    return tuple(Entity(*t) for t in triples)


def _mimic_code_values(hosp: str, icu: str) -> tuple[str, ...]:
    """The value columns of MIMIC-IV in its module layout (mimic-code's schemas, BigQuery's datasets): the names the
    EHRSQL schema's profile indexes, where they sit there, and what that schema lacks (race; the medications of the
    eMAR and the pharmacy)."""
    return (f"{hosp}.d_labitems.label", f"{icu}.d_items.label", f"{hosp}.d_icd_diagnoses.long_title",
            f"{hosp}.d_icd_procedures.long_title", f"{hosp}.prescriptions.drug", f"{hosp}.prescriptions.route",
            f"{hosp}.emar.medication", f"{hosp}.pharmacy.medication", f"{hosp}.microbiologyevents.spec_type_desc",
            f"{hosp}.microbiologyevents.test_name", f"{hosp}.microbiologyevents.org_name", f"{hosp}.admissions.admission_type",
            f"{hosp}.admissions.admission_location", f"{hosp}.admissions.discharge_location", f"{hosp}.admissions.insurance",
            f"{hosp}.admissions.language", f"{hosp}.admissions.marital_status", f"{hosp}.admissions.race",
            f"{hosp}.patients.gender", f"{icu}.icustays.first_careunit", f"{icu}.icustays.last_careunit",
            f"{hosp}.transfers.careunit", f"{hosp}.transfers.eventtype")


def _mimic_code_keys(hosp: str, icu: str) -> tuple[str, ...]:
    """The keys of MIMIC-IV in its module layout that the EHRSQL schema declares and mimic-code's DuckDB and BigQuery
    copies do not: visits to their admission, items and codes to their dictionaries."""
    visits = [f"{hosp}.{t}.hadm_id -> {hosp}.admissions.hadm_id" for t in ("diagnoses_icd", "procedures_icd", "labevents",
              "prescriptions", "microbiologyevents", "transfers")] + [f"{icu}.icustays.hadm_id -> {hosp}.admissions.hadm_id"]
    items = [f"{icu}.{t}.itemid -> {icu}.d_items.itemid" for t in ("chartevents", "inputevents", "outputevents", "procedureevents",
                                                                  "datetimeevents", "ingredientevents")]
    stays = [f"{icu}.{t}.stay_id -> {icu}.icustays.stay_id" for t in ("chartevents", "inputevents", "outputevents", "procedureevents")]
    return (f"{hosp}.admissions.subject_id -> {hosp}.patients.subject_id", *visits,
            f"{hosp}.diagnoses_icd.icd_code -> {hosp}.d_icd_diagnoses.icd_code",
            f"{hosp}.procedures_icd.icd_code -> {hosp}.d_icd_procedures.icd_code",
            f"{hosp}.labevents.itemid -> {hosp}.d_labitems.itemid", *items, *stays)


def _mimic_code_times(hosp: str, icu: str) -> tuple[str, ...]:
    """The time columns of MIMIC-IV in its module layout: when visits start and end and when events were charted,
    started or stopped (the columns the EHRSQL schema's profile names, where they sit there, and the tables it lacks)."""
    return (f"{hosp}.admissions.admittime", f"{hosp}.admissions.dischtime", f"{hosp}.admissions.deathtime",
            f"{hosp}.procedures_icd.chartdate", f"{hosp}.labevents.charttime", f"{hosp}.prescriptions.starttime",
            f"{hosp}.prescriptions.stoptime", f"{hosp}.pharmacy.starttime", f"{hosp}.pharmacy.stoptime", f"{hosp}.emar.charttime",
            f"{hosp}.microbiologyevents.charttime", f"{hosp}.transfers.intime", f"{hosp}.transfers.outtime",
            f"{icu}.icustays.intime", f"{icu}.icustays.outtime", f"{icu}.chartevents.charttime", f"{icu}.inputevents.starttime",
            f"{icu}.inputevents.endtime", f"{icu}.outputevents.charttime", f"{icu}.procedureevents.starttime",
            f"{icu}.procedureevents.endtime")


PROFILES: dict[str, DatabaseProfile] = {
    p.db_id: p
    for p in (
        DatabaseProfile(
            "mimic_iv", "EHRSQL-2024 / SCARE MIMIC-IV (SQLite) from the MIMIC-IV demo 2.2", "sqlite", EHRSQL_NOW,
            _entities(("patient", "patients", "subject_id"), ("admission", "admissions", "hadm_id"), ("stay", "icustays", "stay_id")),
            person_ids=("subject_id",),
            time_columns=("admissions.admittime", "admissions.dischtime", "diagnoses_icd.charttime", "procedures_icd.charttime",
                          "labevents.charttime", "prescriptions.starttime", "prescriptions.stoptime", "cost.chargetime",
                          "chartevents.charttime", "inputevents.starttime", "outputevents.charttime", "microbiologyevents.charttime",
                          "icustays.intime", "icustays.outtime", "transfers.intime", "transfers.outtime"),
            value_columns=("d_labitems.label", "d_items.label", "d_icd_diagnoses.long_title", "d_icd_procedures.long_title",
                           "prescriptions.drug", "prescriptions.route", "microbiologyevents.spec_type_desc", "microbiologyevents.test_name",
                           "microbiologyevents.org_name", "admissions.admission_type", "admissions.admission_location",
                           "admissions.discharge_location", "admissions.insurance", "admissions.language", "admissions.marital_status",
                           "patients.gender", "icustays.first_careunit", "icustays.last_careunit",
                           "transfers.careunit", "transfers.eventtype"),
            file_name="mimic_iv.sqlite", source_folder="mimic-iv-demo-2.2", builder="mimic_iv", bank="ehrsql-2024-mimic-iv",
        ),
        DatabaseProfile(
            "eicu", "EHRSQL / SCARE eICU (SQLite) from the eICU demo 2.0.1", "sqlite", EHRSQL_NOW,
            _entities(("patient", "patient", "uniquepid"), ("admission", "patient", "patienthealthsystemstayid"),
                      ("stay", "patient", "patientunitstayid")),
            person_ids=("uniquepid", "patienthealthsystemstayid"),
            time_columns=("patient.hospitaladmittime", "patient.unitadmittime", "patient.unitdischargetime",
                          "patient.hospitaldischargetime", "diagnosis.diagnosistime", "treatment.treatmenttime", "lab.labresulttime",
                          "medication.drugstarttime", "medication.drugstoptime", "cost.chargetime", "allergy.allergytime",
                          "intakeoutput.intakeoutputtime", "microlab.culturetakentime", "vitalperiodic.observationtime"),
            value_columns=("patient.gender", "patient.ethnicity", "patient.hospitaladmitsource", "patient.hospitaldischargestatus",
                           "diagnosis.diagnosisname", "treatment.treatmentname", "lab.labname", "medication.drugname",
                           "cost.eventtype", "allergy.drugname", "allergy.allergyname", "intakeoutput.celllabel",
                           "microlab.culturesite", "microlab.organism"),
            file_name="eicu.sqlite", source_folder="eicu-demo-2.0.1", builder="eicu", bank="ehrsql-eicu",
        ),
        DatabaseProfile(
            "mimicsql", "MIMICSQL 5-table schema (SQLite) from the MIMIC-III demo 1.4", "sqlite", None,
            _entities(("patient", "demographic", "subject_id"), ("admission", "demographic", "hadm_id")),
            person_ids=("subject_id",),
            file_name="mimicsql.sqlite", source_folder="mimic-iii-demo-1.4", builder="mimicsql", answer_rule="mimicsql",
        ),
        DatabaseProfile(
            "mimic_iv_raw", "MIMIC-IV in its module layout (DuckDB: mimiciv_hosp, mimiciv_icu, mimiciv_derived)", "duckdb", None,
            _entities(("patient", "mimiciv_hosp.patients", "subject_id"), ("admission", "mimiciv_hosp.admissions", "hadm_id"),
                      ("stay", "mimiciv_icu.icustays", "stay_id")),
            person_ids=("subject_id",), time_columns=_mimic_code_times("mimiciv_hosp", "mimiciv_icu"),
            value_columns=_mimic_code_values("mimiciv_hosp", "mimiciv_icu"), foreign_keys=_mimic_code_keys("mimiciv_hosp", "mimiciv_icu"),
            file_name="mimic_iv_raw.duckdb", source_folder="mimic-iv-demo-2.2", builder="mimic_iv_raw", calibration="mimic_code",
        ),
        DatabaseProfile(
            "mimic_iv_postgres", "MIMIC-IV in PostgreSQL, the MIT-LCP mimic-code layout (mimiciv_hosp, mimiciv_icu, mimiciv_derived)",
            "postgres", None,
            _entities(("patient", "mimiciv_hosp.patients", "subject_id"), ("admission", "mimiciv_hosp.admissions", "hadm_id"),
                      ("stay", "mimiciv_icu.icustays", "stay_id")),
            person_ids=("subject_id",), time_columns=_mimic_code_times("mimiciv_hosp", "mimiciv_icu"),
            value_columns=_mimic_code_values("mimiciv_hosp", "mimiciv_icu"), foreign_keys=_mimic_code_keys("mimiciv_hosp", "mimiciv_icu"),
            source_folder="mimic-iv-demo-2.2", builder="mimic_iv_raw", calibration="mimic_code",
        ),
        DatabaseProfile(
            "mimic_iv_bigquery", "MIMIC-IV 3.1 on BigQuery (physionet-data.mimiciv_3_1_hosp, mimiciv_3_1_icu)", "bigquery", None,
            _entities(("patient", "physionet-data.mimiciv_3_1_hosp.patients", "subject_id"),
                      ("admission", "physionet-data.mimiciv_3_1_hosp.admissions", "hadm_id"),
                      ("stay", "physionet-data.mimiciv_3_1_icu.icustays", "stay_id")),
            # no value columns yet: the value index reads them with SQL BigQuery does not take (CAST ... AS TEXT)
            person_ids=("subject_id",), calibration="mimic_code",
            time_columns=_mimic_code_times("physionet-data.mimiciv_3_1_hosp", "physionet-data.mimiciv_3_1_icu"),
            foreign_keys=_mimic_code_keys("physionet-data.mimiciv_3_1_hosp", "physionet-data.mimiciv_3_1_icu"),
        ),
    )
}
# The built-in profiles as TOML files, the starting point for a hospital's own (``ehrguard db profile`` drafts one).
PROFILE_FILES = Path(__file__).parent / "profiles_data"

GENERIC = DatabaseProfile(
    "generic", "A database ehrguard has no profile for: MIMIC- and eICU-style names are recognised, nothing is fixed.", "sqlite", None,
    _entities(("patient", "patients", "subject_id"), ("patient", "patient", "uniquepid")),
    person_ids=("subject_id", "uniquepid", "patienthealthsystemstayid"),
)
"""What ehrguard assumes of a database it has no profile for (a copy built under another name, a user's own file)."""


def get_profile(db_id: str) -> DatabaseProfile:
    """The built-in profile ``db_id``, or :data:`GENERIC` (under that id) for a database ehrguard does not know."""
    profile = PROFILES.get(db_id)
    if profile is not None:
        return profile
    from dataclasses import replace

    return replace(GENERIC, db_id=db_id)


def known_profile(db_id: str) -> DatabaseProfile:
    """The built-in profile ``db_id``; an unknown id is a ConfigError naming the closest one."""
    if db_id in PROFILES:
        return PROFILES[db_id]
    from ehrguard.errors import ConfigError

    close = difflib.get_close_matches(db_id, list(PROFILES), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"Unknown database profile {db_id!r}.{hint} Known: {', '.join(PROFILES)} (or load one from a TOML file).")


def profile_for_file(path: str | Path) -> DatabaseProfile:
    """The profile of a database file, from its name: ``mimic_iv.sqlite`` and ``mimic_iv_copy.sqlite`` are ``mimic_iv``,
    ``mimic_iv_raw.duckdb`` and ``mimic_iv_raw_x10.duckdb`` are ``mimic_iv_raw``."""
    stem = Path(path).stem.lower()
    # the longest known name first: mimic_iv_raw_x10.duckdb is mimic_iv_raw's, not mimic_iv's
    for db_id in sorted(("mimic_iv", "eicu", "mimicsql", "mimic_iv_raw"), key=len, reverse=True):
        if stem.startswith(db_id):
            return PROFILES[db_id]
    return get_profile(stem)


def answer_rule(db_id: str) -> AnswerRule:
    return get_profile(db_id).answer_rule


def load_profile(path: str | Path) -> DatabaseProfile:
    """A profile from a TOML file (the module docstring shows one).

    Raises:
        ConfigError: the file is missing, not TOML, or a field is unknown or of the wrong kind
            (the message names the field and what it should be).
    """
    from ehrguard.errors import ConfigError
    from ehrguard.verify.offline.calibration import names_a_file

    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as exc:
        raise ConfigError(f"Cannot read the profile {p}: {exc.strerror or exc}.") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"The profile {p} is not valid TOML: {exc}.") from exc
    calibration = data.get("calibration")
    if isinstance(calibration, str) and names_a_file(calibration):
        # ~ first (the user's home), then a relative file is the one beside the profile, wherever ehrguard runs
        data = {**data, "calibration": str(p.parent / Path(calibration).expanduser())}
    return profile_from_dict(data, where=str(p))


def profile_from_dict(data: dict[str, Any], *, where: str = "profile") -> DatabaseProfile:
    """A profile from plain data (a parsed TOML file); see :func:`load_profile`."""
    from ehrguard.errors import ConfigError

    known = {f.name for f in fields(DatabaseProfile)}
    unknown = sorted(set(data) - known)
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"{where}: unknown field {unknown[0]!r}{hint}; fields are {', '.join(sorted(known - {'extra'}))}.")
    if not isinstance(data.get("db_id"), str) or not data["db_id"]:
        raise ConfigError(f"{where}: db_id (a name such as \"st_marys\") is required.")
    values: dict[str, Any] = dict(data)
    values["now"] = _now(values.get("now"), where)
    values["entities"] = _entities_from(values.get("entities", []), where)
    for name in ("person_ids", "time_columns", "value_columns"):
        values[name] = _names(values.get(name, []), name, where, qualified=name != "person_ids")
    values["foreign_keys"] = _keys(values.get("foreign_keys", []), where)
    if not values["person_ids"]:
        values["person_ids"] = tuple(dict.fromkeys(e.id_column for e in values["entities"] if e.name == "patient"))
    if values.get("answer_rule", "ehrsql") not in ("ehrsql", "mimicsql"):
        raise ConfigError(f"{where}: answer_rule is ehrsql or mimicsql.")
    for name in ("description", "dialect", "file_name", "source_folder", "builder", "bank", "calibration"):
        if name in values and not isinstance(values[name], str):
            raise ConfigError(f"{where}: {name} is a string.")
    values["calibration"] = _calibration(values.get("calibration", ""), where)
    return DatabaseProfile(**values)


KeyPair = tuple[tuple[str, str], tuple[str, str]]


def _key_sides(text: Any) -> KeyPair | None:
    """A key "table.column -> table.column" as ((table, column), (table, column)) (the tables may carry their schema;
    any name without a dot or an arrow), or None when it is not one."""
    parts = [side.strip().rsplit(".", 1) for side in text.split("->")] if isinstance(text, str) else []
    if len(parts) != 2 or not all(len(p) == 2 and all(x.strip() for x in p) for p in parts):
        return None
    (table, column), (ref_table, ref_column) = ([x.strip() for x in p] for p in parts)
    return (table, column), (ref_table, ref_column)


def _key(text: Any) -> str | None:
    """A key "table.column -> table.column" in normal form, or None when it is not one."""
    sides = _key_sides(text)
    return " -> ".join(".".join(side) for side in sides) if sides is not None else None


def _keys(value: Any, where: str) -> tuple[str, ...]:
    """A profile's foreign keys, each written "table.column -> table.column"."""
    from ehrguard.errors import ConfigError

    keys = [_key(v) for v in value] if isinstance(value, list) else [None]
    if None in keys:
        raise ConfigError(f'{where}: foreign_keys is a list of "table.column -> table.column" strings '
                          '(e.g. "labs.test_id -> lab_tests.test_id").')
    return tuple(k for k in keys if k is not None)


def _calibration(value: str, where: str) -> str:
    """A profile's calibration, checked now (not at the first question): "" or "default" for the shipped SCARE-fitted
    one, a shipped name ("mimic_code"), or a calibration file."""
    from ehrguard.errors import ConfigError
    from ehrguard.verify.offline.calibration import calibration_path, load_calibration

    if value in ("", "default"):
        return ""
    path = calibration_path(value)
    if load_calibration(path) is None:  # a file that is there but no calibration raises its own one-line error
        raise ConfigError(f"{where}: calibration {value!r} is not a file ({path}); give a file from `ehrguard train calibration`, "
                          "a shipped name (mimic_code), or leave it out for the default.")
    return value


def register_profile(profile: DatabaseProfile) -> DatabaseProfile:
    """Make ``profile`` known by its ``db_id`` in this process (a profile loaded from a hospital's TOML file)."""
    PROFILES[profile.db_id] = profile
    return profile


def resolve_profile(value: str) -> DatabaseProfile:
    """A built-in profile by id, or a profile from a ``.toml`` file (registered under its ``db_id``).

    Raises:
        ConfigError: an unknown id (naming the closest), or a TOML file that is not a profile.
    """
    if value.endswith(".toml"):
        return register_profile(load_profile(value))
    return known_profile(value)


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def profile_to_toml(profile: DatabaseProfile, *, header: str = "") -> str:
    """The profile as the TOML :func:`load_profile` reads (``header``: comment lines to put first)."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()] if header else []
    lines.append(f"db_id = {_toml_value(profile.db_id)}")
    for name in ("description", "dialect"):
        lines.append(f"{name} = {_toml_value(getattr(profile, name))}")
    lines.append(f"now = {_toml_value(profile.now or 'clock')}")
    for name in ("file_name", "source_folder", "builder", "bank", "calibration"):
        if getattr(profile, name):
            lines.append(f"{name} = {_toml_value(getattr(profile, name))}")
    if profile.answer_rule != "ehrsql":
        lines.append(f"answer_rule = {_toml_value(profile.answer_rule)}")
    for name in ("person_ids", "time_columns", "value_columns", "foreign_keys"):
        values = getattr(profile, name)
        if len(values) > 3:
            lines.append(f"{name} = [\n" + "".join(f"    {_toml_value(v)},\n" for v in values) + "]")
        else:
            lines.append(f"{name} = {_toml_value(list(values))}")
    for e in profile.entities:
        lines += ["", "[[entities]]", f"name = {_toml_value(e.name)}", f"table = {_toml_value(e.table)}",
                  f"id_column = {_toml_value(e.id_column)}"]
    return "\n".join(lines) + "\n"


def _now(value: Any, where: str) -> str | None:
    from ehrguard.errors import ConfigError

    if value in ("clock", "", None):
        return None
    if not (isinstance(value, str) and _is_instant(value)):
        raise ConfigError(f"{where}: now is \"clock\" or a fixed instant \"YYYY-MM-DD HH:MM:SS\"; got {value!r}.")
    return value


def _entities_from(items: Any, where: str) -> tuple[Entity, ...]:
    from ehrguard.errors import ConfigError

    entities = []
    for i, e in enumerate(items if isinstance(items, list) else [items]):
        if not isinstance(e, dict) or set(e) != {"name", "table", "id_column"} or e["name"] not in _ENTITY_NAMES:
            raise ConfigError(f"{where}: entities[{i}] needs exactly name ({'/'.join(_ENTITY_NAMES)}), table and id_column.")
        entities.append(Entity(e["name"], str(e["table"]), str(e["id_column"])))
    return tuple(entities)


def _names(items: Any, name: str, where: str, *, qualified: bool) -> tuple[str, ...]:
    from ehrguard.errors import ConfigError

    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise ConfigError(f"{where}: {name} is a list of strings.")
    if qualified and any("." not in x for x in items):
        raise ConfigError(f"{where}: {name} entries are \"table.column\".")
    return tuple(items)


def _is_instant(text: str) -> bool:
    from datetime import datetime

    try:
        datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return False
    return True


__all__ = ["EHRSQL_NOW", "GENERIC", "PROFILES", "PROFILE_FILES", "DatabaseProfile", "Entity", "answer_rule", "get_profile",
           "known_profile", "load_profile", "profile_for_file", "profile_from_dict", "profile_to_toml", "register_profile",
           "resolve_profile"]
