"""Start-up of every entry point, measured as whole processes (docs/verifier.md, issue 15's targets).

- ``verify``: one-shot ``ehrguard verify`` on the demo MIMIC-IV against the import floor
  (``python -c "import ehrguard, numpy, onnxruntime, sqlglot, duckdb"``), run in turn, wall time and the
  process's own peak memory (``ru_maxrss``) of each; medians and the ratio pair by pair.
- ``serve``: ``ehrguard serve`` (the databases of ``$EHRGUARD_DB_DIR``) until ``/healthz`` answers; then a probe
  question first, nine other questions, the probe again; and on a second server the nine first and the probe tenth.
  The probe's first time on a new server against its first time on one that answered nine requests says what the
  start leaves cold; against its second time, what its own question's caches save. Then the server's peak and
  current memory and its query workers'.
- ``mcp``: ``ehrguard mcp`` over stdio until ``initialize`` is answered, then the probe, nine others, the probe again.

Run: EHRGUARD_DB_DIR=/tmp/dbs python scripts/startup.py verify serve mcp --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

EHRGUARD = [sys.executable, "-m", "ehrguard"]
FLOOR = [sys.executable, "-c", "import ehrguard, numpy, onnxruntime, sqlglot, duckdb"]
# Hand-written questions for the demo MIMIC-IV (none from a benchmark), each with a candidate to verify.
CASES = [
    ("What is the gender of patient 10004235?", "SELECT gender FROM patients WHERE subject_id = 10004235"),
    ("How many patients were prescribed furosemide in 2150?",
     "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug = 'furosemid'"),
    ("What was the last heart rate of patient 10000032?",
     "SELECT valuenum FROM chartevents JOIN d_items ON chartevents.itemid = d_items.itemid WHERE subject_id = 10000032 "
     "AND label = 'Heart Rate' ORDER BY charttime DESC LIMIT 1"),
    ("How many patients are there?", "SELECT COUNT(*) FROM admissions"),
    ("Is patient 10000032 allergic to penicillin?", "SELECT * FROM prescriptions WHERE subject_id = 10000032 AND drug LIKE '%penicillin%'"),
    ("When was patient 10000032 first admitted?", "SELECT MIN(admittime) FROM admissions WHERE subject_id = 10000032"),
    ("How many lab tests did patient 10000032 have?", "SELECT COUNT(*) FROM labevents WHERE subject_id = 10000032"),
    ("What is the average length of stay in the icu?", "SELECT AVG(los) FROM icustays"),
    ("List the drugs given to patient 10000032 by mouth.",
     "SELECT DISTINCT drug FROM prescriptions WHERE subject_id = 10000032 AND route = 'PO'"),
    ("Which insurance does patient 10000032 have?", "SELECT insurance FROM admissions WHERE subject_id = 10000032"),
]
PROBE = CASES[1]  # the request whose latency is compared


def _timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak memory (MiB) of one run of ``cmd``."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"startup: {' '.join(cmd)} exited with {proc.returncode}")
    return wall, usage.ru_maxrss / 1024


def _spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} (min {min(values):.{digits}f}, max {max(values):.{digits}f})"


def measure_verify(runs: int) -> dict[str, Any]:
    question, sql = PROBE
    cmd = [*EHRGUARD, "verify", "--db", "mimic_iv", "-q", question, "-s", sql]
    _timed(cmd), _timed(FLOOR)  # warm-up: the file cache, the folded model
    rows = [(*_timed(cmd), *_timed(FLOOR)) for _ in range(runs)]
    out = {"verify_s": [r[0] for r in rows], "verify_mib": [r[1] for r in rows], "floor_s": [r[2] for r in rows],
           "floor_mib": [r[3] for r in rows], "ratio": [r[0] / r[2] for r in rows]}
    print(f"one-shot verify: {_spread(out['verify_s'])} s, peak {_spread(out['verify_mib'], 0)} MiB")
    print(f"import floor:    {_spread(out['floor_s'])} s, peak {_spread(out['floor_mib'], 0)} MiB")
    print(f"ratio, run by run: {_spread(out['ratio'])}")
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _memory_kib(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            fields[key] = int(value.split()[0])
    return fields


def _descendants(pid: int) -> list[int]:
    children = [int(p) for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()]
    return children + [d for c in children for d in _descendants(c)]


def _post(url: str, body: dict[str, Any]) -> float:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()
    return time.perf_counter() - start


def _serve(port: int, requests: list[tuple[str, str]]) -> tuple[float, list[float], dict[str, Any]]:
    """Start a server, wait for /healthz, send ``requests`` one after another: (seconds to /healthz, each latency, facts)."""
    start = time.perf_counter()
    server = subprocess.Popen([*EHRGUARD, "serve", "--port", str(port), "--no-auth"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while True:
            if server.poll() is not None:
                sys.exit(f"startup: the server exited: {server.stderr.read().decode() if server.stderr else ''}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    health = json.loads(r.read())
                break
            except OSError:
                time.sleep(0.02)
        ready = time.perf_counter() - start
        times = [_post(f"http://127.0.0.1:{port}/v1/verify", {"db": "mimic_iv", "question": q, "sql": s}) for q, s in requests]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/databases", timeout=10) as r:
            databases = [d["name"] for d in json.loads(r.read())["databases"]]
        facts = {"health": health["status"], "databases": databases, "server": _memory_kib(server.pid),
                 "workers": [_memory_kib(p) for p in _descendants(server.pid)]}
    finally:
        server.terminate()
        server.wait(timeout=30)
    return ready, times, facts


def _probe_runs(run: Callable[[list[tuple[str, str]]], tuple[float, list[float], Any]]) -> tuple[float, list[float], Any, float]:
    """One new process answers the probe first (then nine other questions and the probe again); another answers the
    nine first and the probe tenth: the probe's own first time, in a process that is no longer new. Returns the first
    process's (ready seconds, latencies, facts) and the probe's latency as the other's tenth."""
    others = [c for c in CASES if c != PROBE][:9]
    ready, times, facts = run([PROBE, *others, PROBE])
    _, later, _ = run([*others, PROBE])
    return ready, times, facts, later[-1]


def _probe_summary(times: list[float], tenth: float, where: str) -> str:
    return (f"  the probe as the 1st request: {times[0] * 1000:.0f} ms; as the 10th, after nine other questions, {where}: "
            f"{tenth * 1000:.0f} ms; asked again (its own caches warm): {times[-1] * 1000:.0f} ms; the nine others "
            f"{_spread([t * 1000 for t in times[1:-1]], 0)} ms")


def measure_serve() -> dict[str, Any]:
    ready, times, facts, tenth = _probe_runs(lambda requests: _serve(_free_port(), requests))
    out = {"ready_s": ready, "first_answer_s": ready + times[0], "request_s": times, "probe_tenth_s": tenth, **facts,
           "server_peak_mib": facts["server"]["VmHWM"] / 1024, "server_now_mib": facts["server"]["VmRSS"] / 1024,
           "workers_peak_mib": [w["VmHWM"] / 1024 for w in facts["workers"]]}
    print(f"serve: /healthz ({facts['health']}) after {ready:.2f} s, databases {', '.join(facts['databases'])}; the first /v1/verify "
          f"answered {ready + times[0]:.2f} s after start")
    print(_probe_summary(times, tenth, "on another server"))
    print(f"server memory after warm-up and 11 requests: peak {out['server_peak_mib']:.0f} MiB, now {out['server_now_mib']:.0f} MiB; "
          f"{len(facts['workers'])} query workers, peak {max(out['workers_peak_mib'], default=0):.0f} MiB each at most")
    return out


def _rpc(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any] | None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    while True:
        line = proc.stdout.readline()
        if not line:
            sys.exit("startup: the MCP server closed its output")
        reply = json.loads(line)
        if reply.get("id") == message["id"]:
            return dict(reply)


def _mcp(requests: list[tuple[str, str]]) -> tuple[float, list[float], float]:
    """Start ``ehrguard mcp``, initialise, call verify_sql for each request: (seconds to initialize, latencies, peak MiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen([*EHRGUARD, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        _rpc(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "startup", "version": "1"}}})
        ready = time.perf_counter() - start
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        times = []
        for i, (question, sql) in enumerate(requests, 1):
            t = time.perf_counter()
            reply = _rpc(proc, {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                "params": {"name": "verify_sql", "arguments": {"db": "mimic_iv", "question": question, "sql": sql}}})
            times.append(time.perf_counter() - t)
            if reply is None or "error" in reply or reply["result"].get("isError"):
                sys.exit(f"startup: verify_sql failed: {reply}")
        peak = _memory_kib(proc.pid)["VmHWM"] / 1024
    finally:
        proc.kill()
        proc.wait(timeout=30)
    return ready, times, peak


def measure_mcp() -> dict[str, Any]:
    ready, times, peak, tenth = _probe_runs(_mcp)
    out = {"initialized_s": ready, "first_answer_s": ready + times[0], "call_s": times, "probe_tenth_s": tenth, "peak_mib": peak}
    print(f"mcp: initialize answered after {ready:.2f} s; the first verify_sql answered {ready + times[0]:.2f} s after start; "
          f"peak {peak:.0f} MiB")
    print(_probe_summary(times, tenth, "in another process"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="+", choices=["verify", "serve", "mcp"])
    ap.add_argument("--runs", type=int, default=5, help="one-shot verify runs (after one warm-up)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    report: dict[str, Any] = {}
    for what in args.what:
        report[what] = measure_verify(args.runs) if what == "verify" else measure_serve() if what == "serve" else measure_mcp()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
