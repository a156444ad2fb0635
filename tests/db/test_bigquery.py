"""The BigQuery backend with a fake client: the cap, read-only checks, truncation, error mapping (no network here)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ehrguard.db.bigquery import BigQueryDatabase
from ehrguard.errors import ConfigError, QueryExecutionError, QueryRefusedError, ReadOnlyViolationError


class FakeRows(list):
    schema = (SimpleNamespace(name="n"), SimpleNamespace(name="label"))


class FakeClient:
    def __init__(self, rows=None, error=None, scans=1000):
        self.sent = []
        self.rows, self.error, self.scans = rows or [], error, scans

    def query(self, sql, job_config=None, timeout=None):
        self.sent.append((sql, job_config))
        if getattr(job_config, "dry_run", False):
            return SimpleNamespace(total_bytes_processed=self.scans)
        if self.error:
            raise self.error
        rows = FakeRows(SimpleNamespace(values=lambda r=r: r) for r in self.rows)
        return SimpleNamespace(result=lambda timeout=None, max_results=None: FakeRows(rows[:max_results] if max_results else rows))


class FakeConfig:
    def __init__(self, **kw):
        self.__dict__.update(kw)


FAKE_BQ = SimpleNamespace(QueryJobConfig=FakeConfig)


def test_every_query_carries_the_bytes_cap_and_results_are_capped():
    client = FakeClient(rows=[(1, "a"), (2, "b"), (3, "c")])
    db = BigQueryDatabase(client=client, bigquery_module=FAKE_BQ, max_bytes_billed=1_000_000)
    r = db.execute("SELECT n, label FROM `physionet-data.mimiciv_3_1_hosp.patients`", max_rows=2)
    assert r.columns == ["n", "label"] and r.rows == [(1, "a"), (2, "b")] and r.truncated
    (_, dry), (sql, config) = client.sent
    assert dry.dry_run is True and dry.use_query_cache is False  # the free estimate first
    assert config.maximum_bytes_billed == 1_000_000 and config.use_legacy_sql is False and "physionet-data" in sql


def test_a_query_the_dry_run_puts_over_the_cap_never_runs():
    client = FakeClient(rows=[(1, "a")], scans=5 * 2**40)
    db = BigQueryDatabase(client=client, bigquery_module=FAKE_BQ, max_bytes_billed=10 * 2**30)
    assert db.estimate("SELECT n FROM `physionet-data.mimiciv_3_1_icu.chartevents`") == 5 * 2**40
    with pytest.raises(QueryRefusedError, match=r"5\.000 TiB.*nothing ran"):
        db.execute("SELECT n FROM `physionet-data.mimiciv_3_1_icu.chartevents`")
    assert all(getattr(config, "dry_run", False) for _, config in client.sent)  # only dry runs were sent


@pytest.mark.parametrize("sql", ["DELETE FROM `p.d.t` WHERE TRUE", "SELECT 1; SELECT 2", "", "CREATE TABLE x AS SELECT 1"])
def test_anything_but_one_select_is_refused_before_sending(sql):
    client = FakeClient()
    with pytest.raises((QueryRefusedError, ReadOnlyViolationError)):
        BigQueryDatabase(client=client, bigquery_module=FAKE_BQ).execute(sql)
    assert client.sent == []


def test_errors_are_typed_and_the_cap_is_named():
    db = BigQueryDatabase(client=FakeClient(error=RuntimeError("Query exceeded limit for bytes billed: 1000")), bigquery_module=FAKE_BQ)
    with pytest.raises(QueryRefusedError, match="raise the cap"):
        db.execute("SELECT 1")
    db = BigQueryDatabase(client=FakeClient(error=RuntimeError("Unrecognized name: foo")), bigquery_module=FAKE_BQ)
    with pytest.raises(QueryExecutionError, match="Unrecognized name"):
        db.execute("SELECT foo")


def test_missing_credentials_name_the_fix():
    class NoCredentials:
        QueryJobConfig = FakeConfig

        @staticmethod
        def Client(project=None):
            raise RuntimeError("Your default credentials were not found")

    with pytest.raises(ConfigError, match="application-default login"):
        BigQueryDatabase("my-project", bigquery_module=NoCredentials)
