"""Peak memory of a REST server and its query workers under requests for huge results (docs/reliability.md).

Starts `ehrguard serve` on a free port with the databases of $EHRGUARD_DB_DIR, sends ``--requests`` requests of
``--clients`` concurrent clients for 200 rows of 5 MB blobs (a gigabyte asked for each time, cut at the byte cap),
then prints the server's and each worker's peak resident memory (VmHWM) and the statuses.

Run: python scripts/peak_memory.py --db mimic_iv --requests 40 --clients 4
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default="mimic_iv")
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--sql", default="SELECT zeroblob(5000000) FROM labevents")
    a = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tokens = [f"client-{i}" for i in range(a.clients)]  # one caller each: a caller may hold only half the query slots
    env = {**os.environ, "EHRGUARD_API_TOKENS": ",".join(tokens), "EHRGUARD_API_RATE_LIMIT": "100000"}
    proc = subprocess.Popen([sys.executable, "-m", "ehrguard", "serve", "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url + "/healthz", timeout=1).read()
                break
            except OSError:
                time.sleep(0.2)
        base = _peak_kib(proc.pid)
        body = json.dumps({"db": a.db, "sql": a.sql, "max_rows": 200}).encode()

        def one(i: int) -> tuple[int, int]:
            headers = {"Content-Type": "application/json", "Authorization": f"Bearer {tokens[i % a.clients]}"}
            request = urllib.request.Request(url + "/v1/sql", data=body, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=120) as r:
                    return r.status, len(r.read())
            except urllib.error.HTTPError as exc:
                return exc.code, 0

        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(a.clients) as pool:  # client i sends requests i, i + clients, ...
            replies = [r for rs in pool.map(lambda c: [one(i) for i in range(c, a.requests, a.clients)], range(a.clients)) for r in rs]
        wall = time.perf_counter() - started
        workers = {pid: _peak_kib(pid) for pid in _children(proc.pid)}
        statuses: dict[int, int] = {}
        for status, _ in replies:
            statuses[status] = statuses.get(status, 0) + 1
        print(json.dumps({"requests": a.requests, "clients": a.clients, "seconds": round(wall, 1), "status": statuses,
                          "reply_bytes_max": max(n for _, n in replies), "server_peak_mib_before": round(base / 1024),
                          "server_peak_mib": round(_peak_kib(proc.pid) / 1024),
                          "worker_peak_mib": sorted(round(v / 1024) for v in workers.values()),
                          "server_alive": proc.poll() is None}, indent=1))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
