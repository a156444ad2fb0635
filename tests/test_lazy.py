"""ehrguard.lazy.cached_property: computed once per instance, without making other instances wait."""

from __future__ import annotations

import copy
import pickle
import threading
import time
from dataclasses import dataclass

from ehrguard.lazy import cached_property


@dataclass(frozen=True)
class Slow:
    name: str
    delay: float

    @cached_property
    def value(self) -> str:
        time.sleep(self.delay)
        CALLS.append(self.name)
        return self.name.upper()


CALLS: list[str] = []


def test_one_slow_instance_does_not_hold_up_another_and_each_value_is_computed_once():
    CALLS.clear()
    slow, quick = Slow("slow", 1.5), Slow("quick", 0.0)
    runners = [threading.Thread(target=lambda: slow.value) for _ in range(3)]
    for r in runners:
        r.start()
    time.sleep(0.2)  # the slow computation is under way
    start = time.perf_counter()
    assert quick.value == "QUICK"
    assert time.perf_counter() - start < 0.5  # functools.cached_property on Python 3.11 waited for the slow one here
    for r in runners:
        r.join()
    assert slow.value == "SLOW" and sorted(CALLS) == ["quick", "slow"]  # three threads asked, one computed


def test_an_instance_with_a_computed_value_still_pickles_and_copies():
    item = Slow("x", 0.0)
    assert item.value == "X"
    assert pickle.loads(pickle.dumps(item)).value == "X" and copy.deepcopy(item).value == "X"
    assert Slow.value.__doc__ is None and isinstance(Slow.__dict__["value"], cached_property)
