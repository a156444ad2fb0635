"""Fetching the open PhysioNet demos (needs internet; everything else in ehrguard works offline).

Each demo publishes ``SHA256SUMS.txt``; every file listed there is downloaded into
``$EHRGUARD_DATA_DIR/<folder>/`` and verified. A file already present with the right
checksum is kept, so an interrupted download resumes.
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Callable
from pathlib import Path

from ehrguard.config import data_dir
from ehrguard.errors import ConfigError, DatasetError
from ehrguard.runtime import file_sha256

PHYSIONET = "https://physionet.org/files"
DEMO_URLS = {
    "mimic-iv-demo-2.2": f"{PHYSIONET}/mimic-iv-demo/2.2/",
    "eicu-demo-2.0.1": f"{PHYSIONET}/eicu-crd-demo/2.0.1/",
    "mimic-iii-demo-1.4": f"{PHYSIONET}/mimiciii-demo/1.4/",
}


def parse_checksums(text: str) -> dict[str, str]:
    """``SHA256SUMS.txt`` lines (``<hex>  <path>``) → {path: hex}."""
    sums: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        digest, _, path = line.partition(" ")
        path = path.strip().lstrip("*")
        if len(digest) != 64 or not path or ".." in Path(path).parts or path.startswith("/"):
            raise DatasetError(f"Unexpected line in SHA256SUMS.txt: {line[:100]!r}")
        sums[path] = digest.lower()
    return sums


sha256_of = file_sha256


def _fetch(url: str, target: Path, timeout: float) -> None:
    tmp = target.with_name(target.name + ".part")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, tmp.open("wb") as fh:
            while block := response.read(1 << 20):
                fh.write(block)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise DatasetError(f"Download of {url} failed: {exc}. Check the network, or download by hand and pass --source.") from exc
    os.replace(tmp, target)


def download_demo(
    name: str,
    *,
    dest: Path | None = None,
    base_url: str | None = None,
    progress: Callable[[str], None] | None = None,
    timeout: float = 120.0,
) -> Path:
    """Download and verify the public demo that database ``name`` is built from; returns its folder."""
    from ehrguard.db.builders import source_folders

    folders = source_folders()
    folder = folders.get(name)
    if folder is None:
        raise ConfigError(f"{name!r} has no public demo to download; choose one of {', '.join(folders)}.")
    base = base_url or DEMO_URLS[folder]
    if not base.startswith(("https://", "file://")):
        raise ConfigError(f"Refusing to download over {base.split(':')[0]}: use https.")
    dest = dest or data_dir() / folder
    sums_path = dest / "SHA256SUMS.txt"
    _fetch(base + "SHA256SUMS.txt", sums_path, timeout)
    sums = parse_checksums(sums_path.read_text())
    for i, (path, digest) in enumerate(sorted(sums.items()), 1):
        target = dest / path
        if target.is_file() and sha256_of(target) == digest:
            continue
        if progress:
            progress(f"[{i}/{len(sums)}] {path}")
        _fetch(base + path, target, timeout)
        if sha256_of(target) != digest:
            target.unlink()
            raise DatasetError(f"Checksum mismatch for {path}: the download is corrupt; run the command again.")
    return dest
