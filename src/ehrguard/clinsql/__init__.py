"""ClinSQL: cohort text-to-SQL over MIMIC-IV and its rubric-tree evaluation.

The names below are the API (``from ehrguard.clinsql import generate, rescore``). The modules
are internal: :mod:`.generate` (text-to-SQL on the mimic-code MIMIC-IV) and :mod:`.bench` (a whole
split, resumably); :mod:`.transpile` (BigQuery SQL to DuckDB or PostgreSQL) and :mod:`.execcheck` (how much
of it runs); :mod:`.data` (the split layout), :mod:`.rubric` (the trees), :mod:`.judge` (the LLM
judge), :mod:`.rescore` (scores from recorded decisions) and :mod:`.resultcheck` (the
judge-free check).

Importing the package loads sqlglot and the LLM layer. ``generate``, ``execcheck`` and
``rescore`` share their module's name, so they cannot be exported lazily (PEP 562): the first
import of the module would rebind the package's attribute to the module itself.
"""

from ehrguard.clinsql.bench import run_clinsql
from ehrguard.clinsql.data import Task, load_split
from ehrguard.clinsql.execcheck import execcheck
from ehrguard.clinsql.generate import generate
from ehrguard.clinsql.judge import judge_outputs
from ehrguard.clinsql.rescore import compare_with_published, rescore
from ehrguard.clinsql.resultcheck import check_outputs
from ehrguard.clinsql.rubric import Node, parse_tree, score_tree
from ehrguard.clinsql.transpile import to_duckdb, to_postgres, transpiler_for

__all__ = [
    "Node",
    "Task",
    "check_outputs",
    "compare_with_published",
    "execcheck",
    "generate",
    "judge_outputs",
    "load_split",
    "parse_tree",
    "rescore",
    "run_clinsql",
    "score_tree",
    "to_duckdb",
    "to_postgres",
    "transpiler_for",
]
