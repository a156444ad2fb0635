"""ehrguard: reliable question answering over electronic health records.

The public API::

    from ehrguard import answer, build_database, open_database, execution_match, verify

See the README for the command-line interface.
"""

from ehrguard.answer import Answer, answer
from ehrguard.db import build_database, open_database, read_schema
from ehrguard.errors import EhrguardError
from ehrguard.evaluation import execution_match, reliability_scores
from ehrguard.verify import Verdict, verify

__version__ = "0.1.0"

__all__ = ["Answer", "EhrguardError", "Verdict", "__version__", "answer", "build_database", "execution_match", "open_database",
           "read_schema", "reliability_scores", "verify"]
