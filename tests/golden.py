"""Golden values: numbers a pipeline produced before a refactor, asserted after it.

    check_golden("dbf_tiny_train", {"episode_return": [...], ...}, rtol=1e-3)

The values live in `tests/golden/NAME.json`. `JAXSCHED_UPDATE_GOLDEN=1 pytest ...` rewrites them — only
after a change that is *meant* to move the numbers, said so in the commit. On one machine the pipelines are
bitwise reproducible; across CPUs XLA may vectorise reductions differently (last-bit differences that a few
training updates amplify), hence the stated tolerances: heuristics 1e-6, short training runs 1e-3.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

GOLDEN_DIR = Path(__file__).parent / "golden"


def _plain(x):
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    a = np.asarray(x)
    return a.tolist() if a.ndim else a.item()


def check_golden(name: str, values: dict, rtol: float) -> None:
    """Assert `values` (a mapping of names to numbers or nested lists) equal `tests/golden/NAME.json`
    within `rtol` (and the same keys and shapes)."""
    path = GOLDEN_DIR / f"{name}.json"
    values = _plain(values)
    if os.environ.get("JAXSCHED_UPDATE_GOLDEN") == "1":
        GOLDEN_DIR.mkdir(exist_ok=True)
        path.write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")
        return
    golden = json.loads(path.read_text())
    assert sorted(values) == sorted(golden), (name, sorted(values), sorted(golden))
    for key, want in golden.items():
        np.testing.assert_allclose(
            np.asarray(values[key], np.float64), np.asarray(want, np.float64), rtol=rtol, atol=0,
            err_msg=f"golden {name}: {key}",
        )  # fmt: skip
