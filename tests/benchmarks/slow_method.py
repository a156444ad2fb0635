"""A deliberately slow method for the kill -9 test: it registers itself, then runs the real CLI."""

from __future__ import annotations

import time

from ehrguard.verify.baselines import PreserveAll
from ehrguard.verify.methods import register_method


class SlowPreserve(PreserveAll):
    def verify(self, case):  # type: ignore[no-untyped-def]
        time.sleep(0.05)  # slow enough that a signal sent after 20 saved items arrives long before the 150th
        return super().verify(case)


register_method("slow_preserve", "test: preserve_all, 50 ms per item")(lambda model=None, **o: SlowPreserve("slow_preserve"))

if __name__ == "__main__":
    from ehrguard.cli import main

    main()
