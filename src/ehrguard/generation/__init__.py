"""Text-to-SQL: prompts, schema rendering for the prompt, and refinement from the engine's errors; and the offline
reader, which writes SQL with no LLM from the known question a question paraphrases.

The names below are the API (``from ehrguard.generation import generate``); the modules
:mod:`.text_to_sql`, :mod:`.offline` and the ``prompts/`` folder are internal. The offline reader's names
are imported on first use (it loads the verifier's question banks).
"""

from typing import TYPE_CHECKING

from ehrguard.generation.text_to_sql import MODES, Attempt, Generation, generate, last_sql_block, schema_text
from ehrguard.lazy import by_module, lazy_exports

if TYPE_CHECKING:
    from ehrguard.generation.offline import (
        DEFAULT_PENALTY,
        SHIPPED_READER,
        OfflineSql,
        OfflineWriter,
        ReaderModel,
        example_questions,
        load_reader_model,
        same_answer,
        save_reader_model,
    )

_LAZY = by_module({".offline": ("DEFAULT_PENALTY", "SHIPPED_READER", "OfflineSql", "OfflineWriter", "ReaderModel", "example_questions",
                                "load_reader_model", "same_answer", "save_reader_model")})

__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = ["DEFAULT_PENALTY", "MODES", "SHIPPED_READER", "Attempt", "Generation", "OfflineSql", "OfflineWriter", "ReaderModel",
           "example_questions", "generate", "last_sql_block", "load_reader_model", "same_answer", "save_reader_model",
           "schema_text"]
