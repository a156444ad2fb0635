"""A mixed load against a real server process: verification, normal queries and runaway queries from an abusive client.

The runaway queries end in a timeout, a cut result or a busy reply; the other clients are all answered (no 5xx, no
connection failure), and the server is the same process at the end."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from ehrguard.server.loadtest import run
from tests.helpers import free_port, wait_until_serving


def test_runaway_queries_do_not_starve_verification_or_other_callers(mimic_iv_db: Path, tmp_path: Path):
    dbs = tmp_path / "dbs"
    dbs.mkdir()
    (dbs / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    port = free_port()
    env = {**os.environ, "EHRGUARD_DB_DIR": str(dbs), "EHRGUARD_AUDIT_PATH": str(tmp_path / "audit.sqlite"),
           "EHRGUARD_API_TOKENS": "clinic,abuser", "EHRGUARD_API_RATE_LIMIT": "100000", "EHRGUARD_QUERY_TIMEOUT": "2",
           "EHRGUARD_MAX_CONCURRENT_QUERIES": "4", "EHRGUARD_CALIBRATION": "off"}
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "ehrguard", "serve", "--port", str(port)], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url + "/healthz", proc, log, timeout_s=90)
        out = run(url, {"verify": 2, "sql": 2, "runaway": 3}, 10, "clinic", "mimic_iv", runaway_token="abuser")
        assert proc.poll() is None, log.read_text()[-2000:]  # the same server process throughout
        assert urllib.request.urlopen(url + "/healthz", timeout=5).status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    kinds = out["kinds"]
    assert out["server_errors_5xx"] == 0 and out["connection_failures"] == 0, out
    for kind in ("verify", "sql"):
        assert kinds[kind]["requests"] > 0 and kinds[kind]["unexpected"] == 0, (kind, kinds[kind])
    assert kinds["runaway"]["requests"] > 0 and kinds["runaway"]["unexpected"] == 0, kinds["runaway"]
    assert kinds["runaway"]["status"].get(422, 0) > 0  # runaways were stopped by their limit, not just turned away
    # a normal query waits at most for a slot, never behind a runaway query's whole run
    assert kinds["sql"]["latency_ms"]["p99"] < 3000, kinds["sql"]
