"""OSDEC's Tables 1, 2 and 4 and one episode's capacity and load, from trained and evaluated configs
(`jaxsched table osdec`).

    jaxsched table osdec configs/osdec/table1.yaml configs/osdec/realtime.yaml --out docs/results/osdec

Every config is trained and evaluated first (`jaxsched train C`, then `jaxsched eval C --checkpoint
runs/<name>`, which writes `<run dir>/eval.json`; a config evaluated without a checkpoint gives the baselines'
rows alone). The configs are sorted by their workload:

  * Table 1: the first deferrable config (its preset named in the heading; the paper's is `default`):
    utilization, time delay (−ω1·Σ delay, the paper's sign) and total reward of every method, each beside the
    paper's, with each method's utilization and total reward over FIFO's (ours and the paper's: our episodes
    are smaller than the paper's Azure days, so the ratios are what compare) and the paired Wilcoxon p of each
    learner against the best baseline (from eval.json).
  * Table 2: utilization, deferrable against real time (`workload.realtime`), for the first deferrable and
    real-time configs of one preset, with the real-time / deferrable ratio (ours and the paper's).
  * Table 4: utilization on Table 4's six presets (core1-3, duration1-3), a column per deferrable config
    on one of them: ours, its ratio to FIFO and the paper's ratio.
  * The episode figure (`episode.png`, `episode.json`): test episode `--episode` of Table 1's config played
    by FIFO and by the first seed's OSDEC policy (played as `jaxsched eval` plays it), the capacity C_t
    and the cores running in each step; without a trained `osdec` learner, FIFO's alone.

Methods follow the paper's row order; one a config did not evaluate is "—". Everything lands in `--out`:
`table.md`, `table.json`, the figure.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np

from jaxsched.core.episode import trace_episode
from jaxsched.experiments.evaluate import eval_episode_keys, restore_policy
from jaxsched.experiments.learner import run_dir_of
from jaxsched.experiments.paper import (
    Column,
    Report,
    config_arguments,
    evaluated_configs,
    head,
    methods_table,
    paper_rows,
    print_written,
    table_overrides,
)
from jaxsched.experiments.plots import plot_lines
from jaxsched.experiments.train import CHECKPOINT_DIR
from jaxsched.policies.deferrable import make_heuristic
from jaxsched.systems.osdec.calibration import CALIBRATION
from jaxsched.systems.osdec.config import OSDECConfig, build_osdec
from jaxsched.systems.osdec.evaluation import EVALUATION, HEADLINE
from jaxsched.systems.osdec.train import ppo_for

HELP = "OSDEC's Tables 1, 2 and 4 (utilization, delay, total reward) and one episode's capacity and load"

# The paper's tables, from `paper_numbers.csv` (what the calibration reads); learned rows are means over
# its runs. Table 1: (utilization, time delay, total reward); Table 2: utilization, (deferrable, real time);
# Table 4: utilization under the six distribution cases, in `TABLE4_PRESETS` order.
TABLE4_PRESETS = ("core1", "core2", "core3", "duration1", "duration2", "duration3")
PAPER_TABLE1 = paper_rows(
    CALIBRATION.numbers, "Table 1", [("table1", m) for m in ("utilization", "delay_penalty", "total_reward")]
)
PAPER_TABLE2 = paper_rows(
    CALIBRATION.numbers, "Table 2", [("table1_t2", "utilization"), ("realtime", "utilization")]
)
PAPER_TABLE4 = paper_rows(
    CALIBRATION.numbers, "Table 4 (App. B)", [(p, "utilization") for p in TABLE4_PRESETS]
)
ROWS = tuple(PAPER_TABLE1)  # the paper's row order
ROW_NAMES = {"fifo": "FIFO", "sjf": "SJF", "tetris": "Tetris", "reinforce": "REINFORCE", "ppo_mlp": "PPO",
             "pointer": "PointerNet", "ppo_att": "PPO+Att", "aux_h": "PPO+Att+Aux_H",
             "aux_l": "PPO+Att+Aux_L", "osdec": "OSDEC", "random": "random (ours only)"}  # fmt: skip
REFERENCE = "fifo"  # ratios are to FIFO's; the episode figure plays it beside the paper's agent (HEADLINE)


TABLE1_COLUMNS = (
    Column("utilization (paper)", "utilization", 0),
    Column("÷ FIFO (paper)", "utilization", 0, over=REFERENCE),
    Column("time delay (paper)", "delay_penalty", 1, sign=-1, key="time_delay"),  # −ω1·Σ delay
    Column("total reward (paper)", "total_reward", 2),
    Column("÷ FIFO (paper)", "total_reward", 2, over=REFERENCE),
    Column("total reward ÷ best baseline's, p", "total_reward", test=True, key="vs_best"),
)
TABLE2_COLUMNS = (
    Column("deferrable (paper)", "utilization", 0, source="deferrable", key="deferrable"),
    Column("real time (paper)", "utilization", 1, source="realtime", key="realtime"),
    Column("real time ÷ deferrable (paper)", "utilization", 1, source="realtime", over_column="deferrable"),
)


def _setting(cfg: OSDECConfig) -> str:
    return f"{cfg.workload.preset} preset, {'real time' if cfg.workload.realtime else 'deferrable'}"


def _table(sources: dict, columns, paper: dict) -> tuple[list[str], dict]:
    """`experiments.paper.methods_table` in the paper's row order, with its names and numbers."""
    return methods_table(sources, columns, paper, ROW_NAMES, ROWS)


def table1(cfg: OSDECConfig, results: dict) -> tuple[list[str], dict]:
    lines, rows = _table({"": results}, TABLE1_COLUMNS, PAPER_TABLE1)
    setting = f"{cfg.name}: {_setting(cfg)}, held-out episodes"
    title = f"## Table 1: utilization, time delay and total reward ({setting})"
    note = (
        "Mean ± std over seeds × held-out episodes (`eval.json`); the paper's numbers in parentheses. "
        "Time delay is −ω1·Σ delay (the paper's sign); total reward = utilization + time delay − ω2·Σ "
        "violation. The last column: the learner's mean total reward over the best baseline's and the "
        "two-sided Wilcoxon signed-rank test of the two over the episodes (seed-averaged), n nonzero pairs."
    )
    return [title, "", *lines, "", note, ""], {"config": cfg.name, "setting": _setting(cfg), "rows": rows}


def table2(deferrable: tuple, realtime: tuple) -> tuple[list[str], dict]:
    (cfg_d, res_d), (cfg_r, res_r) = deferrable, realtime
    lines, rows = _table({"deferrable": res_d, "realtime": res_r}, TABLE2_COLUMNS, PAPER_TABLE2)
    title = (f"## Table 2: utilization, deferrable ({cfg_d.name}) against real time ({cfg_r.name}), "
             f"{cfg_d.workload.preset} preset")  # fmt: skip
    note = "Utilization (Σ c·d of started jobs per episode), mean ± std over seeds × episodes."
    return [title, "", *lines, "", note, ""], {"deferrable": cfg_d.name, "realtime": cfg_r.name, "rows": rows}


def table4(configs: list) -> tuple[list[str], dict]:
    """`configs`: `(cfg, results)` of deferrable configs on Table 4's presets, one per preset."""
    by_preset = {cfg.workload.preset: (cfg, res) for cfg, res in configs}
    presets = [p for p in TABLE4_PRESETS if p in by_preset]
    columns = [Column(f"{p} ({by_preset[p][0].name})", "utilization", TABLE4_PRESETS.index(p), source=p,
                      over=REFERENCE, value=True, key=p) for p in presets]  # fmt: skip
    lines, rows = _table({p: by_preset[p][1] for p in presets}, columns, PAPER_TABLE4)
    numbers = {p: {"config": by_preset[p][0].name, "rows": {}} for p in presets}
    for m, r in rows.items():
        for c in columns:
            numbers[c.key]["rows"][m] = {"utilization": r[c.key], "paper": r["paper"] and r["paper"][c.paper]}
    title = "## Table 4: utilization under the distribution cases (ours, ÷ FIFO, (the paper's ÷ FIFO))"
    note = "Means over seeds × held-out episodes; ratios to FIFO on the same preset."
    return [title, "", *lines, "", note, ""], numbers


# ---- one episode --------------------------------------------------------------------------------------
def episode_trace(env, params, policy, policy_params, key, steps: int) -> dict[str, np.ndarray]:
    """One episode of `steps` steps from `env.reset(key)`: per step the capacity C_t, the cores running
    in it (`busy`: what ran on before plus what started) and the reward, `[steps]` each."""

    def record(state, info, reward):
        return {"capacity": info["capacity"], "busy": info["busy"], "reward": reward}

    out = trace_episode(env, params, policy, policy_params, key, steps, record)
    return {k: np.asarray(v) for k, v in out.items()}


def episode_figure(cfg: OSDECConfig, episode: int, out: Path) -> tuple[list[str], dict]:
    env, train_params, test_params = build_osdec(cfg)
    if not 0 <= episode < cfg.workload.test_episodes:
        raise ValueError(f"--episode must be in 0..{cfg.workload.test_episodes - 1}, got {episode}")
    params = env.episode(test_params, episode)
    key = eval_episode_keys(cfg.eval.seed, episode + 1)[episode]
    steps = cfg.workload.horizon
    traces = {REFERENCE: episode_trace(env, params, make_heuristic(env, REFERENCE), None, key, steps)}
    if (run_dir_of(cfg, HEADLINE) / CHECKPOINT_DIR).is_dir():
        pp, _ = restore_policy(EVALUATION, cfg, HEADLINE, env, train_params)
        first_seed = jax.tree.map(lambda x: x[0], pp)
        policy = ppo_for(cfg, HEADLINE, env, None).policy(greedy=cfg.eval.greedy)
        traces[HEADLINE] = episode_trace(env, params, policy, first_seed, key, steps)
    series = {"capacity C_t": (traces[REFERENCE]["capacity"],)}
    series |= {f"running cores, {ROW_NAMES[p]}": (tr["busy"],) for p, tr in traces.items()}
    title = f"{cfg.name}: test episode {episode}, capacity and running load"
    plot_lines(np.arange(steps), series, out / "episode.png", "step", "cores", title)
    numbers = {p: {k: v.tolist() for k, v in tr.items()} for p, tr in traces.items()}
    (out / "episode.json").write_text(json.dumps({"config": cfg.name, "episode": episode, **numbers}))
    lines = [
        f"## One episode ({cfg.name}, test episode {episode}): `episode.png`",
        "",
        *head("policy", "total reward", "cores over capacity (Σ)", "steps at capacity"),
    ]
    for p, tr in traces.items():
        over = np.maximum(tr["busy"] - tr["capacity"], 0).sum()
        full = int(np.sum(tr["busy"] >= tr["capacity"]))
        lines.append(f"| {ROW_NAMES[p]} | {tr['reward'].sum():,.1f} | {over:,.0f} | {full} / {steps} |")
    return lines + [""], {p: {"total_reward": float(tr["reward"].sum())} for p, tr in traces.items()}


# ---- the command ----------------------------------------------------------------------------------------
def osdec_table(config_paths, out_dir, episode: int = 0, overrides=()) -> str:
    """Tables 1, 2, 4 and the episode figure (module docstring) into `out_dir`; returns table.md's text."""
    from jaxsched.systems.osdec import SYSTEM

    configs = evaluated_configs(config_paths, SYSTEM, overrides)
    report = Report.start(out_dir, f"OSDEC: {', '.join(c.name for c, _ in configs)}")
    deferrable = [c for c in configs if not c[0].workload.realtime]
    realtime = [c for c in configs if c[0].workload.realtime]
    if deferrable:
        report.add("table1", table1(*deferrable[0]))
    pair = next(((d, r) for d in deferrable for r in realtime
                 if d[0].workload.preset == r[0].workload.preset), None)  # fmt: skip
    if pair is not None:
        report.add("table2", table2(*pair))
    cases = list({c.workload.preset: (c, r) for c, r in reversed(deferrable)
                  if c.workload.preset in TABLE4_PRESETS}.values())  # fmt: skip
    if cases:
        report.add("table4", table4(cases))
    if deferrable:
        report.add("episode", episode_figure(deferrable[0][0], episode, report.out))
    return report.write()


def add_arguments(parser) -> None:
    config_arguments(parser, "osdec", "table.md, table.json and episode.png")
    parser.add_argument("--episode", type=int, default=0, help="the test episode drawn (default 0)")


def run_from_args(args) -> int:
    text = osdec_table(args.configs, args.out, episode=args.episode, overrides=table_overrides(args))
    return print_written(text, args.out)
