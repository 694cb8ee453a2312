"""DAS's §5.2 claims (Table 1's order, the ablation ladder, DAS below the learned baselines) from the
stored round-6 table (`jaxsched table das ... --json docs/results/das/table1_small_cpu.json`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxsched.experiments.claims import Claim, judged, load_record, pct, unjudged
from jaxsched.systems.das.rows import label

RECORD = "das/table1_small_cpu.json"
PRESET = "configs/das/table1_small_cpu.yaml (before calibration)"
BUDGET = "200 MAPPO updates × 16 envs × 64 steps, 5 seeds (the paper's: not stated)"


def claims(results_dir: Path) -> list[Claim]:
    from jaxsched.systems.das.table import claims as judge_rows

    rec = load_record(results_dir, RECORD)
    if rec is None:
        return [unjudged("Table 1 (§5.2)", "", "", "record missing", BUDGET, PRESET, RECORD)]
    rows = {
        n: None if r is None else {k: np.asarray(v) for k, v in r.items()}
        for n, r in rec["small"]["rows"].items()
    }
    out = []
    for c in judge_rows(rows, "small"):
        name = f"{label(c['lower'])} below {label(c['higher'])} (Small, JCT)"
        if c["verdict"] == "not run":
            out.append(unjudged(name, "", "", "not run", BUDGET, PRESET, RECORD))
            continue
        ours = f"{pct(c['relative'])} ({c['diff']:+,.1f} min)"
        out.append(judged(name, pct(c["paper_relative"]), ours, c, BUDGET, PRESET, RECORD))
    return out
