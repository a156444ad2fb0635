"""A load test of the REST API: N concurrent clients for S seconds against a running server.

``python -m ehrguard.server.loadtest --url http://127.0.0.1:8000 --clients 100 --seconds 60 [--token T]``
verifies only; ``--mix verify=8,sql=4,runaway=4`` mixes verification, normal ``/v1/sql`` queries and
runaway ones (endless or huge; they must end in a timeout, a cut result or a busy reply, and must
not starve the others). Runaway clients can use a token of their own (``--runaway-token``), as an
abusive client would. Prints throughput, latency percentiles and status counts per kind of client
(and ``--json``). Each client keeps one HTTP connection and cycles through fixed cases.
"""

from __future__ import annotations

import argparse
import http.client
import json
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlparse

CASES = [
    ("What is the gender of patient 10004235?", "SELECT gender FROM patients WHERE subject_id = 10004235"),
    ("What is the gender of patient 10004235?", "SELECT gendr FROM patient WHERE subject_id = 10004235"),
    ("How many patients are currently admitted to the hospital?",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE dischtime IS NULL"),
    ("Labs?", "SELECT * FROM labevents LIMIT 5"),
    ("Train a neural network to predict sepsis.", "SELECT 1"),
    ("What was the first heart rate of patient 10004235 on the current icu visit?",
     "SELECT valuenum FROM chartevents WHERE subject_id = 10004235 ORDER BY charttime LIMIT 1"),
]


SQL_CASES = [
    "SELECT COUNT(DISTINCT subject_id) FROM patients",
    "SELECT gender, COUNT(*) FROM patients GROUP BY gender",
    "SELECT * FROM admissions ORDER BY admittime LIMIT 20",
    "SELECT itemid, AVG(valuenum) FROM labevents GROUP BY itemid LIMIT 50",
]
RUNAWAY_CASES = [
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "SELECT zeroblob(5000000) FROM labevents",
    "SELECT count(*) FROM labevents a, labevents b, labevents c",
    "SELECT length(printf('%.*c', 1000000000, 'x'))",
]
# What a runaway query may end in: cut (200), over its time or memory limit (422), or refused for want of a slot (503).
RUNAWAY_OK = {200, 422, 503}


@dataclass
class _KindStats:
    latencies: list[float] = field(default_factory=list)
    status: dict[int, int] = field(default_factory=dict)
    failures: int = 0


def _request(kind: str, i: int, db: str) -> tuple[str, str]:
    if kind == "verify":
        q, sql = CASES[i % len(CASES)]
        return "/v1/verify", json.dumps({"db": db, "question": q, "sql": sql})
    cases = SQL_CASES if kind == "sql" else RUNAWAY_CASES
    return "/v1/sql", json.dumps({"db": db, "sql": cases[i % len(cases)], "max_rows": 200})


def _percentiles(values: list[float]) -> dict[str, float]:
    lat = sorted(values)

    def q(p: float) -> float:
        return round(1000 * lat[min(len(lat) - 1, int(p * (len(lat) - 1)))], 1) if lat else float("nan")

    return {"p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": q(1.0)}


def run(url: str, clients: int | dict[str, int], seconds: float, token: str | None, db: str,
        runaway_token: str | None = None) -> dict:
    """Run the clients (a number of verifying clients, or ``{kind: clients}``) and summarise per kind."""
    mix = clients if isinstance(clients, dict) else {"verify": clients}
    unknown = set(mix) - {"verify", "sql", "runaway"}
    if unknown:
        raise ValueError(f"Unknown kinds of client {sorted(unknown)}: use verify, sql, runaway.")
    u = urlparse(url if "://" in url else f"http://{url}")
    host, port = u.hostname, u.port or 80
    if host is None:
        raise ValueError(f"{url} has no host name.")
    stats = {kind: _KindStats() for kind in mix}
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(kind: str, n: int) -> None:
        key = runaway_token if kind == "runaway" and runaway_token else token
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
        conn = http.client.HTTPConnection(host, port, timeout=120)
        i, mine = n, stats[kind]
        while time.monotonic() < stop:
            path, body = _request(kind, i, db)
            i += 1
            start = time.perf_counter()
            try:
                conn.request("POST", path, body=body, headers=headers)
                resp = conn.getresponse()
                resp.read()
                code = resp.status
            except (OSError, http.client.HTTPException):
                with lock:
                    mine.failures += 1
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=120)
                continue
            with lock:
                mine.latencies.append(time.perf_counter() - start)
                mine.status[code] = mine.status.get(code, 0) + 1
        conn.close()

    threads = [threading.Thread(target=client, args=(kind, n)) for kind, count in mix.items() for n in range(count)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - began
    kinds = {}
    for kind, st in stats.items():
        expected = RUNAWAY_OK if kind == "runaway" else {200}
        kinds[kind] = {"clients": mix[kind], "requests": len(st.latencies), "throughput_rps": round(len(st.latencies) / wall, 1),
                       "latency_ms": _percentiles(st.latencies), "status": st.status,
                       "unexpected": sum(v for k, v in st.status.items() if k not in expected), "connection_failures": st.failures}
    everything = [x for st in stats.values() for x in st.latencies]
    statuses: dict[int, int] = {}
    for st in stats.values():
        for k, v in st.status.items():
            statuses[k] = statuses.get(k, 0) + v
    return {"clients": sum(mix.values()), "seconds": round(wall, 1), "requests": len(everything),
            "throughput_rps": round(len(everything) / wall, 1), "latency_ms": _percentiles(everything), "status": statuses,
            "server_errors_5xx": sum(v for k, v in statuses.items() if k >= 500 and k != 503),
            "connection_failures": sum(st.failures for st in stats.values()), "kinds": kinds}


def _mix(text: str) -> dict[str, int]:
    out = {}
    for part in text.split(","):
        kind, _, count = part.partition("=")
        out[kind.strip()] = int(count)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--token", default=None)
    ap.add_argument("--db", default="mimic_iv")
    ap.add_argument("--mix", default=None, help="clients per kind, e.g. verify=8,sql=4,runaway=4 (replaces --clients)")
    ap.add_argument("--runaway-token", default=None, help="the token runaway clients use (default: --token)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = run(a.url, _mix(a.mix) if a.mix else a.clients, a.seconds, a.token, a.db, a.runaway_token)
    print(json.dumps(out, indent=2) if a.json else
          f"{out['requests']} requests in {out['seconds']} s from {out['clients']} clients: {out['throughput_rps']} req/s; "
          f"p50 {out['latency_ms']['p50']} ms, p99 {out['latency_ms']['p99']} ms; status {out['status']}; "
          f"5xx {out['server_errors_5xx']}; connection failures {out['connection_failures']}")
    if a.mix and not a.json:
        for kind, k in out["kinds"].items():
            print(f"  {kind}: {k['requests']} requests, {k['throughput_rps']} req/s, p50 {k['latency_ms']['p50']} ms, "
                  f"p99 {k['latency_ms']['p99']} ms, status {k['status']}, unexpected {k['unexpected']}")


if __name__ == "__main__":
    main()
