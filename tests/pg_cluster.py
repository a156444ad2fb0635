"""A throwaway PostgreSQL cluster for the tests: initdb + pg_ctl on a temporary folder, Unix socket only, stopped and
removed at the end. ``initdb`` refuses root, so as root the cluster belongs to the ``postgres`` user.

``python -m tests.pg_cluster start DIR`` / ``stop DIR`` does the same from a shell (prints the URL).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path


def binaries() -> Path | None:
    """The folder of initdb and pg_ctl: on PATH, or Debian's /usr/lib/postgresql/<version>/bin (newest first)."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(folder, "initdb").is_file() and Path(folder, "pg_ctl").is_file():
            return Path(folder)
    return None


def _as_owner(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    if runuser is None:
        raise RuntimeError("Running as root without runuser: cannot start PostgreSQL as the postgres user.")
    return [runuser, "-u", "postgres", "--", *cmd]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """One running throwaway cluster; ``url`` reaches its ``postgres`` database as the superuser."""

    def __init__(self, root: Path | None = None) -> None:
        folder = binaries()
        if folder is None:
            raise RuntimeError("No PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql")
        self.bin = folder
        self.root = Path(root or tempfile.mkdtemp(prefix="ehrguard-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.port = _free_port()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@/postgres?host={self.socket_dir}&port={self.port}"

    def url_for(self, database: str, user: str = "postgres") -> str:
        return f"postgresql://{user}@/{database}?host={self.socket_dir}&port={self.port}"

    def start(self) -> Cluster:
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            shutil.chown(self.socket_dir, "postgres")
        subprocess.run(_as_owner([str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                                  "--no-sync"]), check=True, capture_output=True, timeout=120)
        options = f"-c listen_addresses='' -c unix_socket_directories='{self.socket_dir}' -p {self.port} -c fsync=off"
        subprocess.run(_as_owner([str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
                                  "-w", "-t", "60", "start"]), check=True, capture_output=True, timeout=90)
        return self

    def stop(self) -> None:
        subprocess.run(_as_owner([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"]),
                       capture_output=True, timeout=60, check=False)
        shutil.rmtree(self.root, ignore_errors=True)


if __name__ == "__main__":
    action, where = sys.argv[1], Path(sys.argv[2])
    if action == "start":
        cluster = Cluster(where).start()
        (where / "url").write_text(cluster.url)
        print(cluster.url)
    else:
        c = Cluster(where)
        c.data = where / "data"
        c.stop()
