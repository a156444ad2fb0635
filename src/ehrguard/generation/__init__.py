"""Text-to-SQL: prompts, schema rendering for the prompt, and refinement from the engine's errors.

The names below are the API (``from ehrguard.generation import generate``); the module
:mod:`.text_to_sql` and the ``prompts/`` folder are internal.
"""

from ehrguard.generation.text_to_sql import MODES, Attempt, Generation, generate, last_sql_block, schema_text

__all__ = ["MODES", "Attempt", "Generation", "generate", "last_sql_block", "schema_text"]
