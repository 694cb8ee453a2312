"""OSDEC's claims (Table 1: OSDEC above every heuristic and the learned baselines, the auxiliary tasks
help; Table 2: deferrable above real time for every method) from the stored evaluations."""

from __future__ import annotations

from pathlib import Path

from jaxsched.experiments.claims import Claim, judge, judged, load_record, pct, per_episode, unjudged
from jaxsched.experiments.stats import best_of
from jaxsched.systems.osdec.table import PAPER_TABLE1, PAPER_TABLE2

TABLE1 = "osdec/table1_100updates.json"
AUX = "osdec/table1_aux_eval.json"
REALTIME = "osdec/realtime_eval.json"
PRESET = "configs/osdec/table1.yaml (before calibration)"
BUDGET = "100 updates × 2,048 steps × 3 seeds (the paper's: not stated)"
# Table 1's total rewards (the paper's), for the gaps; Table 2's real time ÷ deferrable utilization
PAPER_TOTAL = {m: v[2] for m, v in PAPER_TABLE1.items()}
PAPER_REALTIME = {
    m: PAPER_TABLE2[m][1] / PAPER_TABLE2[m][0] for m in ("fifo", "sjf", "tetris", "ppo_mlp", "osdec")
}
NAMES = {
    "fifo": "FIFO",
    "sjf": "SJF",
    "tetris": "Tetris",
    "ppo_mlp": "PPO-MLP",
    "aux_l": "+Aux_L",
    "aux_h": "+Aux_H",
    "osdec": "OSDEC",
}


def _above(name, rec, record, hi, lo, paper_lo=None, metric="total_reward"):
    """The claim `hi` above `lo` on `metric` (higher is better), judged as `lo` below `hi`; the paper's gap
    is against `paper_lo` (default `lo`: e.g. the paper's own best heuristic). Shown as hi ÷ lo − 1."""
    paper = PAPER_TOTAL[paper_lo or lo] / PAPER_TOTAL[hi] - 1
    c = judge(per_episode(rec[lo][metric]), per_episode(rec[hi][metric]), paper)
    above = lambda rel: pct(1.0 / (1.0 + rel) - 1.0)  # noqa: E731
    return judged(name, above(paper), above(c["relative"]), c, BUDGET, PRESET, record)


def claims(results_dir: Path) -> list[Claim]:
    t1, aux, rt = (load_record(results_dir, r) for r in (TABLE1, AUX, REALTIME))
    out = []
    if t1 is None:
        out.append(unjudged("Table 1", "", "", "record missing", BUDGET, PRESET, TABLE1))
    else:
        best = best_of(t1, ("fifo", "sjf", "tetris"), "total_reward", lower_is_better=False)
        paper_best = max(("fifo", "sjf", "tetris"), key=PAPER_TOTAL.get)
        name = (
            f"OSDEC's total reward above the best heuristic (ours: {NAMES[best]}; paper: {NAMES[paper_best]})"
        )
        out.append(_above(name, t1, TABLE1, "osdec", best, paper_best))
        out.append(_above("OSDEC's total reward above PPO-MLP", t1, TABLE1, "osdec", "ppo_mlp"))
    if aux is not None and t1 is not None:
        merged = {**aux, "osdec": t1["osdec"]}
        for a in ("aux_l", "aux_h"):
            claim = _above(
                f"OSDEC (both auxiliary tasks) above {NAMES[a]}", merged, f"{TABLE1}, {AUX}", "osdec", a
            )
            out.append(claim)
    if rt is None or t1 is None:
        out.append(unjudged("Table 2", "", "", "record missing", BUDGET, PRESET, REALTIME))
        return out
    for m, paper in PAPER_REALTIME.items():
        c = judge(per_episode(rt[m]["utilization"]), per_episode(t1[m]["utilization"]), paper - 1)
        name = f"{NAMES[m]}: utilisation deferrable above real time (Table 2)"
        presets = f"{PRESET}, configs/osdec/realtime.yaml"
        out.append(
            judged(name, pct(paper - 1), pct(c["relative"]), c, BUDGET, presets, f"{TABLE1}, {REALTIME}")
        )
    return out
