"""SCED²'s paper figures and table from trained and evaluated configs (`jaxsched table sced2`).

    jaxsched table sced2 configs/sced2/paper_60.yaml configs/sced2/paper_68.yaml configs/sced2/paper_75.yaml \
        --intervals 0.5,1,2,4 --out docs/results/sced2

  * Fig. 7: average effectiveness, makespan and average JCT per 1-GPU share (one config each, read from
    each learner's `eval.json`), SCED² against every baseline, with the ratio to the best baseline of the
    headline window beside the paper's (E ×1.64 / 1.6 / 1.09 at 60 / 68 / 75 %; JCT ×4.6 and makespan ×2.1
    at 68 %); `fig7_<metric>.png`.
  * Fig. 8 (`--intervals`): the first config's learners (trained on its own arrival process; give the
    68 % config first) and baselines re-evaluated on test traces whose arrival gaps are scaled by each
    factor; `fig8.png`.
  * Fig. 9: the first config's first test episode, the average fragmentation of the servers over time for
    the learner (seed 0) and the baselines, with the GPUs the waiting jobs ask for; `fig9.png`.
  * Fig. 10: average run and wait times, learner against baselines; `fig10.png`.
  * Table III: the share of multi-GPU jobs on relaxed locality (sensitive / insensitive models), their
    average waits, and the share of multi-GPU jobs on reused locality, beside the paper's numbers.
Everything lands in `--out` as `table.md` (and `fig*.png`, `fig8.json`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax
import numpy as np

from jaxsched.core.episode import trace_episode
from jaxsched.experiments.evaluate import Replay, restore_policy
from jaxsched.experiments.learner import run_dir_of
from jaxsched.experiments.paper import (
    Report,
    config_arguments,
    evaluated_configs,
    head,
    paper_rows,
    parse_numbers,
    print_written,
    table_overrides,
)
from jaxsched.experiments.plots import metric_label, plot_grouped_bars, plot_lines
from jaxsched.experiments.stats import best_of, favouring, opponent
from jaxsched.policies.gpu_locality import make_heuristic
from jaxsched.systems.sced2.calibration import CALIBRATION
from jaxsched.systems.sced2.config import SCED2Config, build_sced2
from jaxsched.systems.sced2.evaluation import EVALUATION, LEARNER_LABELS, baseline_label
from jaxsched.systems.sced2.train import dqn_for

HELP = "SCED² paper figures: Fig. 7 per 1-GPU share, Fig. 8 interval sweep, Fig. 9/10, Table III"

FIG7_METRICS = (
    ("avg_effectiveness", "avg E", ".3f"),
    ("makespan", "makespan (s)", ",.0f"),
    ("avg_jct", "avg JCT (s)", ",.0f"),
)
FIG7_SHARES = ("0.6", "0.68", "0.75")
TABLE3_METRICS = (
    "relaxed_sensitive",
    "relaxed_insensitive",
    "wait_sensitive",
    "wait_insensitive",
    "reused_locality",
)
# The paper's numbers, from `paper_numbers.csv` (the calibration's). SCED² over the best baseline (§IV-B,
# Fig. 7), `{(share, metric): ratio}`: > 1 is better for SCED² (E higher; JCT, makespan lower).
_FIG7 = [(share, m) for share in FIG7_SHARES for m, _, _ in FIG7_METRICS]
_RATIOS = paper_rows(CALIBRATION.numbers, "§IV-B text (Fig. 7)", _FIG7, relations=True)["sced2"]
PAPER_RATIOS = {k: r for k, r in zip(_FIG7, _RATIOS, strict=True) if r is not None}
# §IV-C, Fig. 10 (s): `{metric: {"sced2" | "best_baseline": (seconds,)}}`
PAPER_FIG10 = {
    m: paper_rows(CALIBRATION.numbers, f"Fig. 10({panel}) (§IV-C text)", [("0.68", m)])
    for m, panel in (("avg_actual", "a"), ("avg_wait", "b"))
}


def _ms(entry: dict) -> tuple[float, float]:
    """(mean, std): a learner's over its per-seed means, a baseline's over episodes."""
    per_seed = entry.get("per_seed") or [entry["mean"]]
    if len(per_seed) > 1:
        return float(np.mean(per_seed)), float(np.std(per_seed))
    return entry["mean"], entry["std"]


def _learners(results: dict) -> list[str]:
    return [label for label in LEARNER_LABELS.values() if label in results]


def fig7(configs, out: Path) -> list[str]:
    lines = ["## Fig. 7: per 1-GPU share (held-out episodes)", ""]
    lines += head("1-GPU share", "policy", *(h for _, h, _ in FIG7_METRICS), text=2)
    ratios = [
        "",
        *head(
            "1-GPU share",
            "learner vs best baseline",
            *(f"{h}: ours (paper)" for _, h, _ in FIG7_METRICS),
            text=2,
        ),  # fmt: skip
    ]
    bars = {key: {} for key, _, _ in FIG7_METRICS}
    for cfg, results in sorted(configs, key=lambda c: c[0].workload.single_gpu_share):
        share = f"{cfg.workload.single_gpu_share:g}"
        for policy, res in results.items():
            cells = [f"{_ms(res[k])[0]:{f}} ± {_ms(res[k])[1]:{f}}" for k, _, f in FIG7_METRICS]
            lines.append(f"| {share} | {policy} | " + " | ".join(cells) + " |")
            for key, _, _ in FIG7_METRICS:
                bars[key].setdefault(f"{float(share):.0%}", {})[policy] = _ms(res[key])
        for label in _learners(results):
            cells = []
            for key, _, _ in FIG7_METRICS:
                test = results[label][key].get("vs_best")
                paper = PAPER_RATIOS.get((share, key))
                ratio = float("nan") if test is None else favouring(test, key != "avg_effectiveness")
                cells.append(
                    f"×{ratio:.2f} (p = {float('nan') if test is None else test['p']:.2g})"
                    + (f" (×{paper})" if paper else "")
                )
            best = opponent(results[label][FIG7_METRICS[0][0]].get("vs_best", {}))
            ratios.append(f"| {share} | {label} vs {best} | " + " | ".join(cells) + " |")
    for key, _, _ in FIG7_METRICS:
        label = metric_label(key)
        plot_grouped_bars(bars[key], out / f"fig7_{key}.png", label, f"Fig. 7: {label} per 1-GPU share",
                          xlabel="share of 1-GPU jobs in the workload")  # fmt: skip
    ratios.append("")
    ratios.append(
        "Ratios > 1 favour the learner (E higher; JCT and makespan lower); p: paired Wilcoxon over "
        "the held-out episodes. The paper's in parentheses."
    )
    return lines + ratios + [""]


def fig8(cfg: SCED2Config, intervals, out: Path) -> list[str]:
    """Re-evaluate the config's learners (seed mean) and J-window baselines on test traces with scaled
    gaps (`jaxsched eval`'s episodes, `experiments.evaluate.Replay`)."""
    series: dict[str, list] = {}
    replay = Replay.of(EVALUATION, cfg)
    for factor in intervals:
        gaps = cfg.workload.arrival_scale * factor
        scaled = cfg.replace(workload=dataclasses.replace(cfg.workload, arrival_scale=gaps))
        _, _, test_params = build_sced2(scaled)
        results, _ = replay.run(
            test_params, cfg.agent.networks, cfg.eval.baselines, baseline_windows=("window",)
        )
        for name, r in results.items():
            series.setdefault(name, []).append(float(r["avg_effectiveness"]["mean"]))
    x = [cfg.workload.mean_interarrival * cfg.workload.arrival_scale * f for f in intervals]
    (out / "fig8.json").write_text(
        json.dumps({"mean_interarrival_s": x, "avg_effectiveness": series}, indent=2)
    )
    plot_lines(
        x,
        {k: (v,) for k, v in series.items()},
        out / "fig8.png",
        "mean arrival interval (s)",
        "average effectiveness",
        f"Fig. 8: {cfg.name}, J-window baselines",
    )
    lines = [
        "## Fig. 8: average effectiveness against the mean arrival interval",
        "",
        *head("policy", *(f"{v:,.0f} s" for v in x)),
    ]
    lines += [f"| {k} | " + " | ".join(f"{e:.3f}" for e in v) + " |" for k, v in series.items()]
    return lines + [""]


def fig9(cfg: SCED2Config, results: dict, out: Path) -> list[str]:
    """Fragmentation over the first test episode: learner seed 0 and the J-window baselines."""
    env, train_params, test_params = build_sced2(cfg)
    episode = env.episode(test_params, 0)
    steps = int(episode.max_steps)
    actors = {n: (make_heuristic(env, n), None) for n in cfg.eval.baselines}
    for network in cfg.agent.networks:
        if (run_dir_of(cfg, network) / "checkpoints").is_dir():
            q, _ = restore_policy(EVALUATION, cfg, network, env, train_params)
            actors[LEARNER_LABELS[network]] = (
                dqn_for(cfg, network, env, episode).policy(),
                jax.tree.map(lambda a: a[0], q),
            )
    series, waiting = {}, None
    for name, (policy, params) in actors.items():
        t, frag, wait = trace(env, episode, policy, params, steps)
        series[name] = (t / 3600.0, frag)
        if name in LEARNER_LABELS.values() and waiting is None:
            waiting = (f"GPUs the waiting jobs ask for ({name})", t / 3600.0, wait)
    plot_lines(
        None,
        series,
        out / "fig9.png",
        "time (h)",
        "average server fragmentation (Eq. 1)",
        f"Fig. 9: {cfg.name}, first test episode",
        twin=waiting,
    )
    lines = [
        "## Fig. 9: time-weighted average fragmentation (held-out episodes)",
        "",
        *head("policy", "fragmentation"),
    ]
    lines += [
        f"| {p} | {_ms(r['fragmentation'])[0]:.3f} ± {_ms(r['fragmentation'])[1]:.3f} |"
        for p, r in results.items()
    ]
    return lines + [""]


def trace(env, params, policy, policy_params, steps: int):
    """`(time [T], fragmentation [T], waiting GPUs [T])` at every decision of one episode (held after it
    ends), from `env.snapshot` (the env and the policies are deterministic: one key serves)."""

    def record(state, info, reward):
        snap = env.snapshot(state, params)
        return snap["time"], snap["fragmentation"], snap["waiting_gpus"]

    run = jax.jit(lambda pp: trace_episode(env, params, policy, pp, jax.random.key(0), steps, record))
    return tuple(np.asarray(x) for x in run(policy_params))


def fig10_and_table3(cfg: SCED2Config, results: dict, out: Path) -> list[str]:
    learners = _learners(results)
    headline = [baseline_label(b, cfg.eval.headline) for b in cfg.eval.baselines]
    best = best_of(results, headline, "avg_effectiveness", lower_is_better=False)
    shown = learners + [best]
    groups = {
        "avg run time (s)": {p: _ms(results[p]["avg_actual"]) for p in shown},
        "avg wait (s)": {p: _ms(results[p]["avg_wait"]) for p in shown},
    }
    plot_grouped_bars(groups, out / "fig10.png", "seconds", f"Fig. 10: {cfg.name}, learners vs {best}")
    lines = [
        "## Fig. 10: average run and wait times (s)",
        "",
        *head("policy", "run time", "wait"),
    ]
    for p in shown:
        lines.append(
            f"| {p} | {_ms(results[p]['avg_actual'])[0]:,.0f} | {_ms(results[p]['avg_wait'])[0]:,.0f} |"
        )
    cells = [
        " / ".join(f"{PAPER_FIG10[m][r][0]:,.0f}" for r in ("sced2", "best_baseline")) for m in PAPER_FIG10
    ]
    paper = f"| paper: SCED² / best baseline | {cells[0]} | {cells[1]} |"
    lines.append(paper)
    lines += [
        "",
        "## Table III: locality by job type (multi-GPU jobs; waits over all jobs of the type)",
        "",
        *head(
            "policy",
            "relaxed, sensitive",
            "relaxed, insensitive",
            "wait sensitive (s)",
            "wait insensitive (s)",
            "reused locality",
        ),  # fmt: skip
    ]
    for p in shown:
        r = {k: _ms(results[p][k])[0] for k in TABLE3_METRICS}
        lines.append(
            f"| {p} | {r['relaxed_sensitive']:.1%} | {r['relaxed_insensitive']:.1%} | "
            f"{r['wait_sensitive']:,.0f} | {r['wait_insensitive']:,.0f} | {r['reused_locality']:.1%} |"
        )
    lines.append("| paper: SCED² | 15.4% | 32.5% | 1,466 | 741 | > 50% (baselines ≈ 20%) |")
    return lines + [""]


def sced2_table(config_paths, out_dir, intervals=(), overrides=()) -> str:
    from jaxsched.systems.sced2 import SYSTEM

    configs = evaluated_configs(config_paths, SYSTEM, overrides)
    cfg, results = configs[0]
    report = Report.start(out_dir, f"SCED²: {', '.join(c.name for c, _ in configs)}")
    report.add(None, (fig7(configs, report.out), None))
    if intervals:
        report.add(None, (fig8(cfg, intervals, report.out), None))
    report.add(None, (fig9(cfg, results, report.out), None))
    if _learners(results):
        report.add(None, (fig10_and_table3(cfg, results, report.out), None))
    return report.write()


def add_arguments(parser) -> None:
    config_arguments(parser, "sced2", "table.md and the figures")
    parser.add_argument("--intervals", default="", help="Fig. 8: arrival-gap factors, e.g. 0.5,1,2,4")


def run_from_args(args) -> int:
    intervals = parse_numbers(args.intervals, "--intervals")
    return print_written(sced2_table(args.configs, args.out, intervals, table_overrides(args)), args.out)
