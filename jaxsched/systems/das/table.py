"""`jaxsched table das`: the DAS paper's tables from trained and evaluated configs.

    jaxsched table das configs/das/small.yaml --out docs/results/das  # Table 1, Table 3 (Wilcoxon), claims
    jaxsched table das configs/das/small.yaml configs/das/medium.yaml --out DIR    # a section per config
    jaxsched table das configs/das/small.yaml --loads 0.5,1,2 --out DIR   # App. E: Low / Normal / High
    jaxsched table das configs/das/small.yaml --latency --out DIR         # App. F: time per round and job
    jaxsched table das configs/das/small.yaml --planners mosa --out DIR   # evaluate MOSA first (slow)
    jaxsched table das configs/das/small_cpu.yaml --runs runs/s1/das_small_cpu runs/s2/das_small_cpu --out DIR

Every config is trained and evaluated first (`jaxsched train C`, then `jaxsched eval C --checkpoint
runs/<name>`, which writes `<run dir>/eval.json`; a config evaluated without a checkpoint gives the
heuristics' rows alone; `--out-dir` and `--set` say where the runs are, as for `train`). Rows:
  * the heuristics of `eval.policies` and the learned schedulers (DL², RIFLING, DA, DA+MC, DA+RWGP, DAS)
    from that evaluation, a variant missing there from the `eval.json` its training wrote into `<run
    dir>/<variant>/`; a variant not trained yet is listed as such;
  * MOSA / MALO, from `<run dir>/<planner>/eval.json` once `--planners` has evaluated them.
Every row holds one value per (seed, test episode), with the same evaluation keys, so rows are paired:
mean ± std is over seeds × episodes, and the Wilcoxon signed-rank test (Table 3) pairs test episodes (each
row's mean over its seeds: an episode is one unit however many seeds saw it). The paper's test pairs jobs;
with per-episode averages the smallest attainable p is 2 / 2^episodes.

`--runs` adds run directories of the same config trained under other `seed`s (one process per training
seed, as on a CPU). Every run's seed slot i sees the same evaluation keys, so a learned row stacks one
[S, E] block per training seed, and the heuristic and planner rows, evaluated once, repeat their block
once per training seed of DAS (of the most-trained variant when DAS has none): the pairs stay pairs.
With `--loads`, each run's selected actor is evaluated again at each load and stacked the same way.
Below Table 3 every claim of the paper's §5.2 (DAS below each baseline, the ablation order, DAS below DL²
and RIFLING) gets a verdict from a test paired by episode, with its power against the paper's gap.
Everything lands in `--out`: `table.md` and `table.json` (every number, a section per config).
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.agents.das import LABELS as VARIANT_LABELS
from jaxsched.agents.das import PRESETS
from jaxsched.experiments.paper import (
    Column,
    Report,
    config_arguments,
    evaluated_configs,
    head,
    methods_table,
    paper_rows,
    parse_numbers,
    print_written,
    table_overrides,
)
from jaxsched.experiments.report import claim_table_lines
from jaxsched.experiments.stats import (
    claim_verdict,
    per_unit,
    verdict_with_power,
    wilcoxon_power,
    wilcoxon_signed_rank,
)
from jaxsched.experiments.throughput import median_time
from jaxsched.policies.gpu_cloud import make_heuristic
from jaxsched.systems.das.calibration import CALIBRATION
from jaxsched.systems.das.config import DASConfig
from jaxsched.systems.das.episodes import build_for_eval
from jaxsched.systems.das.evaluation import DAS_METRICS
from jaxsched.systems.das.rows import (
    PLANNERS,
    collect_rows,
    evaluate_planner,
    heuristic_rows,
    label,
    runs_by_seed,
)
from jaxsched.workloads.ddl import CLUSTER_SIZES

HELP = "the DAS paper's tables (1, 3, App. E, F) from trained runs and freshly evaluated baselines"

METRICS = DAS_METRICS[:2]  # Table 1: JCT and fee

# The paper's Table 1, `{cluster: {row: (JCT min, fee $)}}`, from `paper_numbers.csv` (the calibration's).
PAPER_TABLE1 = {
    c: paper_rows(CALIBRATION.numbers, "Table 1", [(c, "avg_jct_min"), (c, "avg_fee")]) for c in CLUSTER_SIZES
}


# ---- tables -------------------------------------------------------------------------------------------
def _cell(v, fmt: str) -> str:
    return "—" if v is None else f"{np.mean(v):{fmt}} ± {np.std(v):{fmt}}"


def _stats(rows: dict) -> dict:
    """`{name: {metric: {mean, std}}}` of the rows that ran (over seeds × episodes)."""
    return {n: {k: {"mean": float(np.mean(v)), "std": float(np.std(v))} for k, v in r.items()}
            for n, r in rows.items() if r is not None}  # fmt: skip


def table1_lines(rows: dict, cluster: str) -> list[str]:
    """Markdown Table 1 for one cluster (with the paper's numbers beside ours); rows not run named below."""
    columns = [Column(f"{m.header} (paper)", m.key, i, m.fmt) for i, m in enumerate(METRICS)]
    paper = PAPER_TABLE1[cluster]
    ran = {n: r for n, r in rows.items() if r is not None}
    names = {n: f"{label(n)} ({' × '.join(map(str, r['avg_jct_min'].shape))})" for n, r in ran.items()}
    lines, _ = methods_table({"": _stats(ran)}, columns, paper, names, first="scheduler (seeds × episodes)")
    missing = [label(n) for n, r in rows.items() if r is None]
    return lines + ([] if not missing else ["", f"Not run yet: {', '.join(missing)}."])


def significance(rows: dict, target: str = "das") -> list[dict]:
    """Wilcoxon signed-rank tests of `target` against the best baseline (lowest mean JCT among the
    heuristics, planners and learned baselines run on the same test episodes) and against RIFLING
    (the paper's Table 3), on JCT and fee. A pair is one test episode: each row's mean over its seeds
    (a heuristic's one evaluation, repeated per training seed by `--runs`, counts once). Empty when
    `target` has no results."""
    mine = rows.get(target)
    if mine is None:
        return []
    n_episodes = mine["avg_jct_min"].shape[1]
    baselines = {
        n: r
        for n, r in rows.items()
        if r is not None
        and n not in ("da", "da_mc", "da_rwgp", "das")
        and r["avg_jct_min"].shape[1] == n_episodes
    }
    if not baselines:
        return []
    best = min(baselines, key=lambda n: baselines[n]["avg_jct_min"].mean())
    tests = []
    for other in dict.fromkeys([best, "rifling"]):
        if other not in baselines:
            continue
        for metric, header, *_ in METRICS:
            ours, theirs = per_unit(mine[metric]), per_unit(baselines[other][metric])  # [E] each
            res = wilcoxon_signed_rank(ours, theirs)
            diff = float(ours.mean() - theirs.mean())
            tests.append(
                {
                    "versus": other,
                    "best": other == best,
                    "metric": metric,
                    "header": header,
                    "diff": diff,
                    **res,
                }
            )
    return tests


def significance_lines(tests: list[dict], target: str = "das") -> list[str]:
    if not tests:
        return [f"(no Wilcoxon test: {label(target)} has no results on a baseline's seeds × episodes)"]
    out = [
        *head(
            f"{label(target)} vs",
            "metric",
            "mean difference",
            "W+",
            "W−",
            "pairs (nonzero of all)",
            "p (two-sided, exact)",
            text=2,
        ),  # fmt: skip
    ]
    for t in tests:
        who = label(t["versus"]) + (" (best baseline)" if t["best"] else "")
        out.append(
            f"| {who} | {t['header']} | {t['diff']:+,.2f} | {t['w_plus']:g} | {t['w_minus']:g} | "
            f"{t['n']} of {t.get('pairs', t['n'])} | {t['p']:.2g} |"
        )
    return out


# ---- the paper's claims ------------------------------------------------------------------------------
# Table 1's claims (§5.2), as (lower, higher) JCT pairs: DAS below every baseline that was run, the
# ablation order DAS < DA+MC < DA+RWGP < DA, and DAS below the learned baselines DL² and RIFLING.
ABLATION_ORDER = ("das", "da_mc", "da_rwgp", "da")


def claim_pairs(rows: dict) -> list[tuple[str, str]]:
    heuristics = [n for n in rows if n not in PRESETS]  # heuristics and planners
    ladder = list(zip(ABLATION_ORDER[:-1], ABLATION_ORDER[1:], strict=True))
    learned = [("das", "dl2"), ("das", "rifling")]
    return list(dict.fromkeys([*(("das", h) for h in heuristics), *ladder, *learned]))


def claims(rows: dict, cluster: str, alpha: float = 0.05, n_sim: int = 1000) -> list[dict]:
    """Each claim of `claim_pairs`: `lower` has a lower average JCT than `higher` on the test episodes.
    Paired by test episode (each row's mean over its seeds, so learned rows with different seed counts
    still pair), the exact Wilcoxon test, and the test's power against the paper's relative gap
    (`stats.wilcoxon_power`). Verdict: reproduced (p < alpha, lower mean), not reproduced (p < alpha,
    higher; or p ≥ alpha where the test had `stats.DECISIVE_POWER` to find the paper's gap), undecided
    (p ≥ alpha, less power); "not run" when a row is missing. A row evaluated on fewer episodes (a
    planner's `--planner-episodes`: the first E of the same ordered test episodes) pairs on those E."""
    out = []
    for lower, higher in claim_pairs(rows):
        rec = {"lower": lower, "higher": higher}
        a, b = rows.get(lower), rows.get(higher)
        if a is None or b is None:
            out.append({**rec, "verdict": "not run"})
            continue
        n = min(a["avg_jct_min"].shape[1], b["avg_jct_min"].shape[1])
        ea, eb = a["avg_jct_min"][:, :n].mean(axis=0), b["avg_jct_min"][:, :n].mean(axis=0)  # [E] per episode
        paper = PAPER_TABLE1[cluster].get(lower), PAPER_TABLE1[cluster].get(higher)
        paper_rel = None if None in paper else paper[0][0] / paper[1][0] - 1.0
        power = None if paper_rel is None else wilcoxon_power(ea - eb, paper_rel * eb.mean(), alpha, n_sim)
        claim = claim_verdict(ea, eb, alpha)
        claim["verdict"] = verdict_with_power(claim, power)
        out.append({**rec, **claim, "paper_relative": paper_rel, "power": power})
    return out


def claim_lines(results: list[dict]) -> list[str]:
    def paper(c):
        return "" if c["paper_relative"] is None else f"{100 * c['paper_relative']:+.1f} %"

    def power(c):
        return "" if c["power"] is None else f"{c['power']:.2f}"

    return claim_table_lines(
        results, lambda c: f"{label(c['lower'])} < {label(c['higher'])}",
        after=(("paper", paper), ("power at the paper's gap", power)), diff_header="mean difference (min)",
    )  # fmt: skip


# ---- App. E: load levels ------------------------------------------------------------------------------
def load_level_rows(cfg: DASConfig, loads, variants, runs=()) -> dict:
    """`{load: {name: {metric: [S, E]}}}`: the heuristics and every trained variant of `variants` on the
    test episodes with the arrival rate × load (the agents were trained at load 1). `runs`: more run
    directories of `cfg`'s recipe (as for Table 1); a variant's actors from each, stacked by training seed."""
    from jaxsched.experiments.learner import run_dir_of
    from jaxsched.experiments.train import CHECKPOINT_DIR
    from jaxsched.systems.das.train import evaluate_learned, evaluated_actor_params

    built = build_for_eval(cfg)
    env, train_params, test_params, starts = built
    actors = {}  # variant -> [(its run's config, actor [S, ...])] in order of training seed
    for v in variants:
        if runs:
            run_cfgs = [
                cfg.replace(out_dir=str(d.parent), name=d.name)
                for _, d, _ in runs_by_seed(cfg, [cfg.run_dir, *map(Path, runs)], v)
            ]
        else:
            run_cfgs = [cfg]
        for rcfg in run_cfgs:
            try:
                actor, _ = evaluated_actor_params(rcfg, v, env, train_params)
            except FileNotFoundError as e:
                if (run_dir_of(rcfg, v) / CHECKPOINT_DIR).exists():  # trained, but nothing to evaluate
                    print(f"{VARIANT_LABELS[v]} of {rcfg.run_dir} left out of the load levels: {e}")
                continue
            actors.setdefault(v, []).append((rcfg, actor))
    out = {}
    for load in loads:
        rows = dict(heuristic_rows(cfg, built, load_scale=load))
        params = test_params.replace(load_scale=jnp.float32(load))
        for v, found in actors.items():
            blocks = [evaluate_learned(rcfg, v, actor, env, params, starts) for rcfg, actor in found]
            rows[v] = {k: np.concatenate([b[k] for b in blocks]) for k in blocks[0]}
        out[load] = rows
    return out


def load_level_lines(levels: dict) -> list[str]:
    loads = list(levels)
    names = list(next(iter(levels.values())))
    out = head("scheduler", *(f"×{x:g} {h}" for x in loads for h in ("JCT (min)", "Fee ($)")))
    for n in names:
        cells = []
        for x in loads:
            r = levels[x].get(n)
            cells += [_cell(None if r is None else r[k], fmt) for k, _, fmt, _ in METRICS]
        out.append(f"| {label(n)} | " + " | ".join(cells) + " |")
    return out


# ---- App. F: decision latency ---------------------------------------------------------------------------
def latency_rows(cfg: DASConfig, variants, planners=()) -> list[dict]:
    """Seconds per scheduling round (one env, batch 1, on this device) of each heuristic, trained
    variant and planner, on busy decision points of FIFO-LoadBalance episodes; per job = per round ÷ the
    jobs visible in the round."""
    from jaxsched.agents.das import DASAgent
    from jaxsched.policies.metaheuristics import decision_states, make_malo, make_mosa, time_per_decision

    env, train_params, test_params, _ = build_for_eval(cfg)
    obs_b, state_b = decision_states(env, test_params, jax.random.key(0), decisions=1, skip=200)
    obs = jax.tree.map(lambda x: x[0, 0], obs_b)
    visible = max(int(obs.job_mask.sum()), 1)
    key = jax.random.key(1)
    rows = []
    for name in cfg.eval.policies:
        heuristic = make_heuristic(name)
        policy = jax.jit(lambda o, k, p=heuristic: p(None, o, k))
        rows.append({"name": name, "round_s": median_time(policy, obs, key, repeats=20)})
    for v in variants:
        agent = DASAgent.for_env(cfg.agent.agent_config(v), env)
        history = agent.initial_carry()
        actor = agent.init(jax.random.key(2), obs, history)  # latency does not depend on the weights
        act = jax.jit(lambda a, o, h, k, ag=agent: ag.act(a, o, h, k, greedy=True))
        rows.append({"name": v, "round_s": median_time(act, actor, obs, history, key, repeats=20)})
    for p in planners:
        planner = {"mosa": make_mosa, "malo": make_malo}[p](env, test_params)
        rows.append({"name": p, "round_s": time_per_decision(env, test_params, planner, key, skip=200)})
    for r in rows:
        r["per_job_s"] = r["round_s"] / visible
        r["visible_jobs"] = visible
        r["device"] = jax.devices()[0].platform
    return rows


def latency_lines(rows: list[dict]) -> list[str]:
    out = head("scheduler", "per round (ms)", "per job (ms)")
    out += [f"| {label(r['name'])} | {1e3 * r['round_s']:.3f} | {1e3 * r['per_job_s']:.4f} |" for r in rows]
    return out


# ---- the command ----------------------------------------------------------------------------------------
def _plain(row: dict | None) -> dict | None:
    return None if row is None else {k: np.asarray(v).tolist() for k, v in row.items()}


def section(cfg: DASConfig, results: dict, runs=(), loads=(), latency: bool = False) -> tuple[list, dict]:
    """One config's Table 1, Table 3, claims and, when asked, load levels and latency: `(lines, numbers)`."""
    cluster = cfg.cluster.size
    rows = collect_rows(cfg, results, runs=runs)
    tests, verdicts = significance(rows), claims(rows, cluster)
    lines = [
        f"## {cfg.name}: {cluster} cluster ({cfg.cluster.machines} machines × 8 GPUs), mean ± std over "
        f"seeds × test episodes of {cfg.env.episode_jobs:,} jobs",
        "",
        *table1_lines(rows, cluster), "", "Wilcoxon signed-rank tests:", "", *significance_lines(tests), "",
        "The paper's claims (paired by test episode, seeds averaged; α = 0.05):", "", *claim_lines(verdicts),
    ]  # fmt: skip
    if runs:
        note = (f"Learned rows stack {1 + len(runs)} run directories by training seed; the heuristic and "
                "planner rows repeat their one evaluation for each seed (the same keys).")  # fmt: skip
        lines[1:1] = ["", note]
    rec = {"config": cfg.name, "cluster": cluster, "rows": {n: _plain(r) for n, r in rows.items()},
           "wilcoxon": tests, "claims": verdicts}  # fmt: skip
    learned = [v for v in PRESETS if rows.get(v) is not None]
    if loads:
        levels = load_level_rows(cfg, loads, learned, runs=runs)
        lines += ["", "Load levels (App. E; trained at ×1):", "", *load_level_lines(levels)]
        rec["loads"] = {str(x): {n: _plain(r) for n, r in lv.items()} for x, lv in levels.items()}
    if latency:
        lat = latency_rows(cfg, learned or ["das"], planners=[p for p in PLANNERS if rows.get(p) is not None])
        lines += ["", f"Decision latency (App. F; batch 1, {lat[0]['device']}):", "", *latency_lines(lat)]
        rec["latency"] = lat
    return lines + [""], rec


def das_table(config_paths, out_dir, runs=(), planners=(), planner_episodes=None, planner_seeds=None,
              loads=(), latency: bool = False, overrides=()) -> str:  # fmt: skip
    """Every config's `section` (module docstring) into `out_dir`; returns table.md's text."""
    from jaxsched.systems.das import SYSTEM

    unknown = sorted(set(planners) - set(PLANNERS))
    if unknown:
        raise ValueError(f"--planners: unknown {unknown} (choose from {', '.join(PLANNERS)})")
    if runs and latency:
        raise ValueError("--latency does not depend on the weights: run it without --runs")
    if runs and len(config_paths) > 1:
        raise ValueError("--runs belongs to one config: give that config alone")
    missing = [str(r) for r in runs if not Path(r).is_dir()]
    if missing:
        raise FileNotFoundError(f"--runs: no such run directory: {', '.join(missing)}")
    configs = evaluated_configs(config_paths, SYSTEM, overrides)
    report = Report.start(out_dir, f"DAS: {', '.join(c.name for c, _ in configs)}")
    for cfg, results in configs:
        for p in planners:
            print(f"table das: evaluating {label(p)} on {cfg.name} (slow) …", file=sys.stderr, flush=True)
            evaluate_planner(cfg, p, planner_episodes, planner_seeds)
        report.add(cfg.name, section(cfg, results, runs, loads, latency))
    return report.write()


def add_arguments(parser) -> None:
    config_arguments(parser, "das", "table.md and table.json")
    parser.add_argument(
        "--runs", nargs="+", default=[], metavar="RUN_DIR",
        help="more run dirs (out_dir/name) of the same config trained with other seeds; stacked as seeds",
    )  # fmt: skip
    parser.add_argument("--planners", default="", help="first evaluate these planners (mosa,malo): slow")
    parser.add_argument("--planner-episodes", type=int, default=None, help="test episodes for --planners")
    parser.add_argument("--planner-seeds", type=int, default=None, help="seeds for --planners")
    parser.add_argument("--loads", default="", help="App. E: arrival-rate multipliers, e.g. 0.5,1,2")
    parser.add_argument("--latency", action="store_true", help="App. F: decision time per round and per job")


def run_from_args(args) -> int:
    text = das_table(
        args.configs, args.out, runs=args.runs,
        planners=[p.strip() for p in args.planners.split(",") if p.strip()],
        planner_episodes=args.planner_episodes, planner_seeds=args.planner_seeds,
        loads=parse_numbers(args.loads, "--loads"), latency=args.latency, overrides=table_overrides(args),
    )  # fmt: skip
    return print_written(text, args.out)
