"""The download path, exercised against a local file:// mirror (no internet in tests)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ehrguard.db.download import DEMO_URLS, download_demo, parse_checksums
from ehrguard.errors import ConfigError, DatasetError


def _mirror(root: Path, files: dict[str, bytes], corrupt: str | None = None) -> str:
    lines = []
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
        digest = hashlib.sha256(b"other" if path == corrupt else data).hexdigest()
        lines.append(f"{digest}  {path}")
    (root / "SHA256SUMS.txt").write_text("\n".join(lines) + "\n")
    return root.as_uri() + "/"


def test_demo_urls_point_at_physionet_files():
    assert DEMO_URLS["mimic-iv-demo-2.2"] == "https://physionet.org/files/mimic-iv-demo/2.2/"
    assert all(u.startswith("https://physionet.org/files/") and u.endswith("/") for u in DEMO_URLS.values())


def test_parse_checksums_rejects_path_escapes():
    assert parse_checksums("a" * 64 + "  hosp/patients.csv.gz\n") == {"hosp/patients.csv.gz": "a" * 64}
    with pytest.raises(DatasetError):
        parse_checksums("a" * 64 + "  ../etc/passwd\n")
    with pytest.raises(DatasetError):
        parse_checksums("nothex  file\n")


def test_download_verifies_and_resumes(tmp_path: Path):
    base = _mirror(tmp_path / "mirror", {"hosp/patients.csv.gz": b"p", "icu/icustays.csv.gz": b"i"})
    dest = tmp_path / "data"
    got = download_demo("mimic_iv", dest=dest, base_url=base)
    assert (got / "hosp" / "patients.csv.gz").read_bytes() == b"p"
    # A second run keeps verified files (resume) and still succeeds.
    seen: list[str] = []
    download_demo("mimic_iv", dest=dest, base_url=base, progress=seen.append)
    assert seen == []


def test_corrupt_download_is_an_error_and_removed(tmp_path: Path):
    base = _mirror(tmp_path / "mirror", {"a.csv": b"x"}, corrupt="a.csv")
    with pytest.raises(DatasetError, match="Checksum mismatch"):
        download_demo("eicu", dest=tmp_path / "d", base_url=base)
    assert not (tmp_path / "d" / "a.csv").exists()


def test_plain_http_and_unknown_names_are_refused(tmp_path: Path):
    with pytest.raises(ConfigError):
        download_demo("mimic_iv", dest=tmp_path, base_url="http://example.org/")
    with pytest.raises(ConfigError):
        download_demo("synthetic", dest=tmp_path)
