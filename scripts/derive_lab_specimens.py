"""Write what each MIMIC-IV lab item is measured in (its fluid and its section of the lab: chemistry, hematology, blood
gas) to ``verify/offline/data/mimic_iv_lab_specimens.json``, from the lab dictionary of the MIMIC-IV demo.

The EHRSQL builds of MIMIC-IV keep only an item's label, and several items share one ("glucose" is a blood gas item,
two chemistry items and two urine items): what tells them apart ships with the package, so the specimen check needs
no data directory. The dictionary of the demo is the dictionary of the full MIMIC-IV.

    EHRGUARD_DATA_DIR=../shared/data python scripts/derive_lab_specimens.py
"""

from __future__ import annotations

import csv
import gzip
import json
import sys
from pathlib import Path

from ehrguard.config import data_dir

OUT = Path(__file__).resolve().parents[1] / "src/ehrguard/verify/offline/data/mimic_iv_lab_specimens.json"
SOURCE = "mimic-iv-demo-2.2/hosp/d_labitems.csv.gz"


def main() -> int:
    path = data_dir() / SOURCE
    if not path.exists():
        print(f"error: {path} is missing; set EHRGUARD_DATA_DIR to the folder holding mimic-iv-demo-2.2/", file=sys.stderr)
        return 1
    with gzip.open(path, "rt", newline="") as f:
        items = {row["itemid"]: [row["label"].lower().strip(), row["fluid"].lower().strip(), row["category"].lower().strip()]
                 for row in csv.DictReader(f)}
    record = {"source": f"MIMIC-IV demo 2.2, {SOURCE.rsplit('/', 1)[-1]} (ODbL)", "columns": ["label", "fluid", "category"],
              "items": dict(sorted(items.items(), key=lambda kv: int(kv[0])))}
    OUT.write_text(json.dumps(record, separators=(",", ":")) + "\n")
    print(f"{len(items)} lab items -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
