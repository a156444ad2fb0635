"""What each MIMIC-IV lab item is measured in, as the MIMIC-IV lab dictionary says (shipped with the package).

Several items share one label ("glucose": a blood gas item, two chemistry items, two urine items); the EHRSQL builds keep
only the label. ``mimic_iv_lab_specimens.json`` (derived by ``scripts/derive_lab_specimens.py`` from the demo's
``d_labitems``, which is the full dictionary) keeps the fluid and the lab section too. The checks read it only where the
database's own dictionary gives a code the same label.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

KNOWLEDGE = Path(__file__).resolve().parents[1] / "offline" / "data" / "mimic_iv_lab_specimens.json"


@cache
def lab_items() -> dict[str, tuple[str, str, str]]:
    """itemid -> (label, fluid, category), all in lower case."""
    record = json.loads(KNOWLEDGE.read_text())
    return {code: (label, fluid, category) for code, (label, fluid, category) in record["items"].items()}
