"""The example contact log (scenarios/examples/contacts.csv) and the scenario calibrated from it.

Five working days of a single-queue contact center open 08:00-16:00, exported the way contact-center
platforms export: one row per contact with ISO date-times, the queue, category and tier. It is simulated
here from a known truth (the standard day's arrival profile and ticket bank, no triage or escalation
desk, 10 resolvers, exponential patience with a 20-minute mean), so calibration can be checked against it:

    python benchmarks/contact_log_example.py            # writes into a temporary folder, prints the fit
    python benchmarks/contact_log_example.py --write    # rewrites the committed files

The committed scenario is ``csr-marl calibrate scenarios/examples/contacts.csv`` with the defaults.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import csr_marl

ROOT = Path(__file__).resolve().parents[1]
TRUTH = {
    "staffing.triage": 0, "staffing.escalation": 0, "staffing.resolver": 10,
    "customers.patience": {"dist": "exponential", "mean_minutes": 20.0},
}
DAYS = ["2024-03-04", "2024-03-05", "2024-03-06", "2024-03-07", "2024-03-08"]
OPENS = timedelta(hours=8)


def stamp(day: str, minute: float) -> str:
    return (datetime.fromisoformat(day) + OPENS + timedelta(minutes=minute)).isoformat(timespec="seconds")


def contact_rows() -> list[dict[str, object]]:
    rows = []
    for seed, day in enumerate(DAYS):
        result = csr_marl.simulate("standard_day", "expert", seed=seed, overrides=TRUTH, log=True)
        for record in result.log or []:
            if record["outcome"] == "open":
                continue  # still in the center at closing: an export has no end time for it yet
            rows.append({
                "contact_id": f"{day.replace('-', '')}-{record['ticket_id']}-{record['contact']}",
                "queue": "resolver", "category": record["category"], "tier": record["tier"],
                "arrival": stamp(day, record["arrival"]),
                "answered": "" if record["answered_at"] is None else stamp(day, record["answered_at"]),
                "end": stamp(day, record["end"]), "abandoned": int(record["outcome"] == "abandoned"),
            })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite scenarios/examples/contacts.csv and calibrated_day.yaml")
    args = parser.parse_args()
    folder = ROOT / "scenarios" / "examples" if args.write else Path(tempfile.mkdtemp())
    rows = contact_rows()
    log = folder / "contacts.csv"
    with log.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} contacts over {len(DAYS)} days -> {log}")
    subprocess.run([sys.executable, "-m", "csr_marl", "calibrate", str(log), "--out", str(folder / "calibrated_day.yaml"),
                    "--interval", "30", "--horizon", "480"], check=True, cwd=ROOT)


if __name__ == "__main__":
    main()
