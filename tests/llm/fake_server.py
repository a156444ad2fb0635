"""A real HTTP server speaking the OpenAI chat-completions protocol, with scripted faults."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


def ok(text: str, prompt_tokens: int = 10, completion_tokens: int = 5) -> dict[str, Any]:
    return {"status": 200, "body": {"id": "x", "model": "fake-model",
                                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}}}


class FakeOpenAI:
    """Each request takes the next scripted response: {"status", "body" (dict or raw bytes), "delay", "headers", "fault"}.

    ``fault`` breaks the connection instead of answering well: ``reset`` closes it before any reply, ``truncate``
    sends half the body under the whole body's Content-Length and closes, ``stall`` sends the headers and half the
    body, then waits ``delay`` seconds before closing. With the script empty it answers ``default`` (if set).
    Records requests and the peak number in flight.
    """

    def __init__(self) -> None:
        self.script: deque[dict[str, Any]] = deque()
        self.default: dict[str, Any] | None = None
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with outer._lock:
                    outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                    step = outer.script.popleft() if outer.script else outer.default
                    outer.in_flight += 1
                    outer.peak = max(outer.peak, outer.in_flight)
                try:
                    fault = step.get("fault") if step else None
                    time.sleep(step.get("delay", 0) if step and not fault else 0)
                    if fault:
                        self._break(step, fault)
                        return
                    if step is None:
                        self.send_response(500)
                        self.end_headers()
                        self.wfile.write(b'{"error": "no scripted response"}')
                        return
                    payload = step["body"] if isinstance(step["body"], bytes) else json.dumps(step["body"]).encode()
                    self.send_response(step["status"])
                    for k, v in step.get("headers", {}).items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with outer._lock:
                        outer.in_flight -= 1

            def _break(self, step: dict[str, Any], fault: str) -> None:
                payload = step["body"] if isinstance(step.get("body"), bytes) else json.dumps(step.get("body", {})).encode()
                if fault == "reset":
                    self.connection.shutdown(2)
                    self.close_connection = True
                    return
                self.send_response(step.get("status", 200))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload[: len(payload) // 2])
                self.wfile.flush()
                if fault == "stall":
                    time.sleep(step.get("delay", 5))
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # poll_interval 0.05 s: shutdown() waits up to one interval, and the default 0.5 s did so in every test
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
