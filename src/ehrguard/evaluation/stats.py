"""Small statistics the reports share: percentages and percentiles, computed one way everywhere."""

from __future__ import annotations

import math


def percent(num: int, den: int) -> float:
    """``num`` of ``den`` in percent; NaN when there is nothing to divide by."""
    return 100.0 * num / den if den else math.nan


def percentile(ordered: list[float], p: float) -> float:
    """The nearest-rank ``p`` quantile (0..1) of values sorted ascending; NaN for none."""
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, round(p * (len(ordered) - 1))))]
