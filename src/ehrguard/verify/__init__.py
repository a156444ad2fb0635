"""Verification of candidate SQL: the verdict type, the registry of methods, and :func:`verify`.

The names below are the API (``from ehrguard.verify import DatabaseContext, verify``); the
subpackages :mod:`ehrguard.verify.checks` (the SQL checks) and :mod:`ehrguard.verify.offline`
(the offline verifier) have their own. The modules are internal: :mod:`.api`, :mod:`.methods`
and :mod:`.verdict` define the names below; the methods themselves (:mod:`.llm_methods`,
:mod:`.hybrid`, :mod:`.baselines`, and the offline verifier) are reached by name through
:func:`get_method`, which imports them on first use.
"""

from ehrguard.verify.api import MAX_QUESTION_CHARS, check_question_size, database_context, postgres_context, prefetch, verify, warm_up
from ehrguard.verify.methods import Case, DatabaseContext, Method, available_methods, get_method, method_uses_model, register_method
from ehrguard.verify.verdict import ACTIONS, Exchange, Finding, Verdict

__all__ = [
    "ACTIONS",
    "MAX_QUESTION_CHARS",
    "Case",
    "DatabaseContext",
    "Exchange",
    "Finding",
    "Method",
    "Verdict",
    "available_methods",
    "check_question_size",
    "database_context",
    "get_method",
    "method_uses_model",
    "postgres_context",
    "prefetch",
    "register_method",
    "verify",
    "warm_up",
]
