"""A load test of ``/v1/verify``: N concurrent clients for S seconds against a running server.

``python -m ehrguard.server.loadtest --url http://127.0.0.1:8000 --clients 100 --seconds 60 [--token T]``
prints throughput, latency percentiles and error counts (and ``--json``). Each client keeps
one HTTP connection and cycles through a fixed set of questions and candidates (every kind
of verdict).
"""

from __future__ import annotations

import argparse
import http.client
import json
import threading
import time
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


def run(url: str, clients: int, seconds: float, token: str | None, db: str) -> dict:
    u = urlparse(url)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    latencies: list[float] = []
    status: dict[int, int] = {}
    failures = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    host = u.hostname

    def client(n: int) -> None:
        # A URL without a host name fails here in every client thread (as it did before this check), and run() reports no requests.
        assert host is not None, f"{url} has no host name"
        conn = http.client.HTTPConnection(host, u.port or 80, timeout=60)
        i = n
        while time.monotonic() < stop:
            q, sql = CASES[i % len(CASES)]
            i += 1
            body = json.dumps({"db": db, "question": q, "sql": sql})
            start = time.perf_counter()
            try:
                conn.request("POST", "/v1/verify", body=body, headers=headers)
                resp = conn.getresponse()
                resp.read()
                code = resp.status
            except (OSError, http.client.HTTPException):
                with lock:
                    failures[0] += 1
                conn.close()
                conn = http.client.HTTPConnection(host, u.port or 80, timeout=60)
                continue
            with lock:
                latencies.append(time.perf_counter() - start)
                status[code] = status.get(code, 0) + 1
        conn.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - began
    lat = sorted(latencies)

    def q(p: float) -> float:
        return round(1000 * lat[min(len(lat) - 1, int(p * (len(lat) - 1)))], 1) if lat else float("nan")

    return {"clients": clients, "seconds": round(wall, 1), "requests": len(lat), "throughput_rps": round(len(lat) / wall, 1),
            "latency_ms": {"p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": q(1.0)}, "status": status,
            "server_errors_5xx": sum(v for k, v in status.items() if k >= 500), "connection_failures": failures[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--token", default=None)
    ap.add_argument("--db", default="mimic_iv")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = run(a.url, a.clients, a.seconds, a.token, a.db)
    print(json.dumps(out, indent=2) if a.json else
          f"{out['requests']} requests in {out['seconds']} s from {out['clients']} clients: {out['throughput_rps']} req/s; "
          f"p50 {out['latency_ms']['p50']} ms, p99 {out['latency_ms']['p99']} ms; status {out['status']}; "
          f"5xx {out['server_errors_5xx']}; connection failures {out['connection_failures']}")


if __name__ == "__main__":
    main()
