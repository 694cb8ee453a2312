"""SCED²'s Fig. 7 claims (SCED² over the best baseline per 1-GPU share) from the stored evaluation summary
(`docs/results/sced2/eval_summary.json`: the Wilcoxon test over the test episodes against the best baseline;
the per-episode values were not kept, so no power)."""

from __future__ import annotations

from pathlib import Path

from jaxsched.experiments.claims import Claim, judged, load_record, unjudged
from jaxsched.experiments.stats import favouring, opponent
from jaxsched.systems.sced2.table import FIG7_SHARES, PAPER_RATIOS

RECORD = "sced2/eval_summary.json"
BUDGET = "≈ 2,400 episodes a seed, 3 seeds (×1.0 of the paper's 2,400)"
# (share in %, metric, the paper's SCED² ÷ best-baseline ratio in its favour)
PAPER = tuple((f"{100 * float(s):.0f}", m, PAPER_RATIOS[(s, m)]) for s in FIG7_SHARES
              for m in ("avg_effectiveness", "avg_jct", "makespan") if (s, m) in PAPER_RATIOS)  # fmt: skip
NAMES = {"avg_effectiveness": "execution effectiveness", "avg_jct": "average JCT", "makespan": "makespan"}


def _verdict(ratio: float, p: float, alpha: float = 0.05) -> str:
    if p >= alpha:
        return "undecided"
    return "reproduced" if ratio > 1 else "not reproduced"


def claims(results_dir: Path) -> list[Claim]:
    rec = load_record(results_dir, RECORD)
    out = []
    for share, metric, paper in PAPER:
        name = f"SCED² better than the best baseline on {NAMES[metric]}, {share} % 1-GPU jobs"
        preset = f"configs/sced2/philly_{share}.yaml (before calibration)"
        entry = None if rec is None else rec.get(f"sced2_{share}_shared", {}).get("sced2", {}).get(metric)
        if entry is None or "vs_best" not in entry:
            out.append(unjudged(name, f"×{paper:g}", "", "record missing", BUDGET, preset, RECORD))
            continue
        t = entry["vs_best"]
        ratio = favouring(t, metric != "avg_effectiveness")
        c = {"verdict": _verdict(ratio, t["p"]), "p": t["p"], "pairs": t["n"]}
        out.append(
            judged(
                name,
                f"×{paper:g}",
                f"×{ratio:.2f} vs {opponent(t).upper()}",
                c,
                BUDGET,
                preset,
                RECORD,
            )
        )
    return out
