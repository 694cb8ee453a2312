"""Recompute `jaxsched.workloads.philly.RUNTIME_QUANTILES` from the Philly run times.

    python scripts/philly_runtime_table.py [CSV]

CSV defaults to `../shared/data/gpu/alibaba_pai_v2020/philly_runtime.csv` relative to the repository root
(header `runtime`, 83,154 task run times in seconds). Keeps the 75,226 run times in [60 s, 7 days], the
window `ddl.py`'s PAI-like generator clips its log-normal to: the 7,632 sub-minute ones (2 of them 0 s)
are mostly failed starts and the paper's Fig. 3b runs from minutes up; 296 run beyond a week. Prints
their 201 quantiles at p = 0, 0.005, ..., 1 (numpy's default linear interpolation between order
statistics), rounded to 0.1 s, as the Python tuple pasted into `jaxsched/workloads/philly.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CSV = REPO.parent / "shared" / "data" / "gpu" / "alibaba_pai_v2020" / "philly_runtime.csv"
WINDOW = (60.0, 7 * 86400.0)
N_QUANTILES = 201


def runtime_table(path: Path = DEFAULT_CSV) -> tuple[np.ndarray, int, int]:
    """(the `N_QUANTILES` quantiles rounded to 0.1 s, tasks kept, tasks in the file)."""
    runtime = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64)
    kept = runtime[(runtime >= WINDOW[0]) & (runtime <= WINDOW[1])]
    q = np.quantile(kept, np.linspace(0.0, 1.0, N_QUANTILES))
    return np.round(q, 1), int(kept.size), int(runtime.size)


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CSV
    q, kept, total = runtime_table(path)
    print(f"# {kept:,} of {total:,} run times in [{WINDOW[0]:g}, {WINDOW[1]:g}] s; {N_QUANTILES} quantiles")
    print("RUNTIME_QUANTILES: tuple[float, ...] = (")
    for i in range(0, N_QUANTILES, 8):
        print("    " + ", ".join(f"{v:.1f}" for v in q[i : i + 8]) + ",")
    print(")  # fmt: skip")


if __name__ == "__main__":
    main()
