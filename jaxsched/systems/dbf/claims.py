"""Deep Back-Filling's claims (the split window beats the head-only one, DBF beats the heuristics) from
the stored CPU evaluations (`docs/results/dbf/big/`), which hold per-seed means only: no paired test."""

from __future__ import annotations

from pathlib import Path

from jaxsched.experiments.claims import NO_RECORD, Claim, load_record, pct, unjudged

SPLIT = "dbf/big/m10_9_1_eval.json"
HEAD = "dbf/big/m10_10_0_eval.json"
PRESET = "configs/dbf/cpu_m10_9_1.yaml, cpu_m10_10_0.yaml"
BUDGET = "200 updates × 3 seeds (the paper trains 100,000 episodes)"
BASELINES = ("fcfs_easy", "lcfs_easy", "sjf_easy", "fcfs", "lcfs", "sjf")
VERDICT = f"undecided ({NO_RECORD})"


def _ours(a: float, b: float) -> str:
    return f"{pct(a / b - 1)} ({a:,.0f} vs {b:,.0f} s)"


def claims(results_dir: Path) -> list[Claim]:
    split, head = load_record(results_dir, SPLIT), load_record(results_dir, HEAD)
    if split is None:
        return [unjudged("DBF (§IV)", "", "", "record missing", BUDGET, PRESET, SPLIT)]
    wait = split["agent"]["avg_wait"]["mean"]
    out = []
    if head is not None:
        name = "a split window (9 + 1) below the head-only window (10 + 0), average wait"
        ours = _ours(wait, head["agent"]["avg_wait"]["mean"])
        out.append(unjudged(name, "lower", ours, VERDICT, BUDGET, PRESET, f"{SPLIT}, {HEAD}"))
    for b in BASELINES:
        name = f"DBF 9 + 1 below {b.replace('_easy', ' + EASY').upper()}, average wait"
        out.append(
            unjudged(name, "lower", _ours(wait, split[b]["avg_wait"]["mean"]), VERDICT, BUDGET, PRESET, SPLIT)
        )
    return out
