"""Sanity baselines. They prove the metric code, they are not verifiers.

* ``preserve_all`` keeps every candidate: its PR is the share of correct candidates that
  still match on our databases, its CR the share of wrong ones that happen to match.
* ``abstain_all`` labels every question unanswerable.
* ``oracle`` reads the benchmark's expected output (the gold SQL, the true label): 100 everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ehrguard.errors import ConfigError
from ehrguard.verify.methods import Case, register_method
from ehrguard.verify.verdict import Verdict


@dataclass
class _Baseline:
    name: str

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "kind": "sanity baseline"}


class PreserveAll(_Baseline):
    def verify(self, case: Case) -> Verdict:
        return Verdict("preserve", sql=case.sql, message="Kept unchanged (preserve_all baseline).")


class AbstainAll(_Baseline):
    def verify(self, case: Case) -> Verdict:
        return Verdict("unanswerable", message="Refused (abstain_all baseline).")


class Oracle(_Baseline):
    def verify(self, case: Case) -> Verdict:
        item = case.expected
        if item is None:
            raise ConfigError("The oracle baseline needs the benchmark's labels; it runs only under `ehrguard bench`.")
        if item.sampled_category == "ambiguous":
            return Verdict("ambiguous", subtype=item.type)
        if item.sampled_category == "unanswerable":
            return Verdict("unanswerable", subtype=item.type)
        # The gold SQL even for correct candidates: a few of those no longer match on a rebuilt database.
        if item.exec_acc:
            return Verdict("preserve", sql=item.gt_sql, message="Kept (oracle; emits the gold SQL).")
        return Verdict("correct", sql=item.gt_sql, message="Replaced by the gold SQL (oracle).")


def _factory(cls: type[_Baseline], name: str):
    def make(model: str | None = None, **options: Any) -> _Baseline:
        if model:
            raise ConfigError(f"{name} uses no model; drop --model.")
        if options:
            raise ConfigError(f"{name} takes no options (got {', '.join(options)}).")
        return cls(name)

    return make


register_method("preserve_all", "baseline: keep every candidate SQL")(_factory(PreserveAll, "preserve_all"))
register_method("abstain_all", "baseline: label every question unanswerable")(_factory(AbstainAll, "abstain_all"))
register_method("oracle", "baseline: the benchmark's expected output (benchmark only)")(_factory(Oracle, "oracle"))
