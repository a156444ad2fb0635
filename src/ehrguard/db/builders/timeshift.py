"""The EHRSQL time shift: move each patient's records into the years up to 2100.

EHRSQL (and SCARE on top of it) de-identifies dates by shifting every patient so that
their first hospital admission falls in a sampled year (2100 for EHRSQL-2024 and SCARE's
MIMIC-IV, 2100-2105 for eICU), then drops every record after a fixed "now",
``2100-12-31 23:59:00``. Patients whose stay crosses "now" become the "currently
admitted" patients the questions ask about.

The year is drawn from numpy's PCG64 generator seeded with 0, with weights growing
linearly over the span (later years more likely), one draw per patient in order of
first appearance. A year shift is whole 365-day years in minutes, as in the original.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from ehrguard.profiles import EHRSQL_NOW

NOW = EHRSQL_NOW
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def sample_year(rng: np.random.Generator, start_year: int, span: int) -> int:
    """One year in ``[start_year, start_year + span]``, weight proportional to 1, 2, ..., span+1."""
    weights = np.arange(1, span + 2)
    return int(rng.choice(range(start_year, start_year + span + 1), p=weights / weights.sum()))


def year_offset_minutes(rng: np.random.Generator, start_year: int, span: int, earliest_year: int) -> int:
    """Minutes to add so a patient whose first admission is in ``earliest_year`` lands in the sampled year."""
    return (sample_year(rng, start_year, span) - earliest_year) * 365 * 24 * 60


def shift(value: str | None, minutes: int | None, *, now: str = NOW) -> str | None:
    """Shift one ``YYYY-MM-DD HH:MM:SS`` timestamp; None when missing, unknown patient, or after ``now``."""
    if value is None or value == "" or minutes is None:
        return None
    shifted = str(datetime.strptime(value, TIME_FORMAT) + timedelta(minutes=int(minutes)))
    return None if now < shifted else shifted


def shift_offset(anchor: str, offset_minutes: float | None, *, now: str = NOW) -> str | None:
    """eICU style: ``anchor`` (a shifted admission time) plus a minute offset; None past ``now``."""
    if anchor is None or offset_minutes is None:
        return None
    shifted = str(datetime.strptime(anchor, TIME_FORMAT) + timedelta(minutes=int(offset_minutes)))
    return None if now < shifted else shifted
