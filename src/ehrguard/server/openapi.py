"""Print the REST API's OpenAPI spec (committed as docs/openapi.json): ``python -m ehrguard.server.openapi``."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from ehrguard.audit import AuditLog
from ehrguard.server.app import create_app

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(tokens=["spec"], audit=AuditLog(Path(tmp) / "a.sqlite"))
        print(json.dumps(app.openapi(), indent=2, sort_keys=True))
