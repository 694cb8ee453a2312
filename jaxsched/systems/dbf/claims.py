"""Deep Back-Filling's claims (the split window beats the head-only one, DBF beats the heuristics) from
the stored CPU evaluations (`docs/results/dbf/big/`), which hold per-seed means only: no paired test."""

from __future__ import annotations

from pathlib import Path

from jaxsched.experiments.claims import NO_RECORD, Claim, load_record, pct

SPLIT = "dbf/big/m10_9_1_eval.json"
HEAD = "dbf/big/m10_10_0_eval.json"
PRESET = "configs/dbf/cpu_m10_9_1.yaml, cpu_m10_10_0.yaml"
BUDGET = "200 updates × 3 seeds (the paper trains 100,000 episodes)"
BASELINES = ("fcfs_easy", "lcfs_easy", "sjf_easy", "fcfs", "lcfs", "sjf")


def _ours(a: float, b: float) -> str:
    return f"{pct(a / b - 1)} ({a:,.0f} vs {b:,.0f} s)"


def claims(results_dir: Path) -> list[Claim]:
    split, head = load_record(results_dir, SPLIT), load_record(results_dir, HEAD)
    if split is None:
        return [Claim("DBF (§IV)", "", "", "record missing", None, None, None, BUDGET, PRESET, SPLIT)]
    verdict = f"undecided ({NO_RECORD})"
    wait = split["agent"]["avg_wait"]["mean"]
    out = []
    if head is not None:
        out.append(
            Claim(
                "a split window (9 + 1) below the head-only window (10 + 0), average wait",
                "lower",
                _ours(wait, head["agent"]["avg_wait"]["mean"]),
                verdict,
                None,
                None,
                None,
                BUDGET,
                PRESET,
                f"{SPLIT}, {HEAD}",
            )
        )
    for b in BASELINES:
        other = split[b]["avg_wait"]["mean"]
        out.append(
            Claim(
                f"DBF 9 + 1 below {b.replace('_easy', ' + EASY').upper()}, average wait",
                "lower",
                _ours(wait, other),
                verdict,
                None,
                None,
                None,
                BUDGET,
                PRESET,
                SPLIT,
            )
        )
    return out
