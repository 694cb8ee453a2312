"""Greedy test JCT of a DAS variant along its training: after the imitation warm start and after every
`--every` MAPPO updates, on the config's held-out episodes with the heuristics' evaluation keys (paired).

    python benchmarks/das_probe.py configs/das/small.yaml --variant das --every 50 --stages 6 \
        --set mappo.num_envs=64 --json probe.json

Where `jaxsched train` evaluates only the final parameters, this shows how noisy the greedy policy is
from one checkpoint to the next, which decides how many updates and seeds a comparison needs. Nothing is
checkpointed; the JSON holds `{stage: JCT [seeds, episodes]}`.

`--diagnose` also records, per stage and seed, what says whether MAPPO can move the policy
(`systems.das.diagnostics`: advantage and return scale, the critic's explained variance, both agents' σ,
the share of calls whose sampled action changes the order or the placement) and the chunk's mean entropy,
approximate KL and clip fraction: `{"diagnostics": {stage: {name: [seeds]}}}`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import jax
import numpy as np

from jaxsched.experiments.train import seed_keys as training_keys
from jaxsched.systems.das.config import load_das_config
from jaxsched.systems.das.diagnostics import rollout_diagnostics
from jaxsched.systems.das.episodes import build_for_eval
from jaxsched.systems.das.train import evaluate_learned, make_mappo, programs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("config")
    p.add_argument("--variant", default="das")
    p.add_argument("--every", type=int, default=50, help="MAPPO updates between evaluations")
    p.add_argument("--stages", type=int, default=4, help="number of evaluations after the warm start")
    p.add_argument("--set", action="append", default=[], help="config override, e.g. mappo.lr=3e-5")
    p.add_argument("--json", default=None)
    p.add_argument("--diagnose", action="store_true", help="also the rollout diagnostics of each stage")
    p.add_argument("--episodes", type=int, default=None, help="test episodes (default the config's eval)")
    args = p.parse_args(argv)

    cfg = load_das_config(args.config, args.set)
    env, train_params, test_params, starts = build_for_eval(cfg, args.episodes)
    mcfg = dataclasses.replace(
        cfg.mappo, updates_per_chunk=args.every, total_updates=args.every * args.stages
    )
    init, chunk, _, warm_start = programs(mcfg, cfg.agent.agent_config(args.variant), env)
    out, diag, t0 = {}, {}, time.perf_counter()
    mappo = make_mappo(mcfg, cfg.agent.agent_config(args.variant), env, train_params)
    diagnose = jax.jit(jax.vmap(lambda r, k: rollout_diagnostics(mappo, r, k)))

    def record(stage, runner, metrics=None):
        per = evaluate_learned(cfg, args.variant, runner.params["actor"], env, test_params, starts)
        jct = per["avg_jct_min"]
        out[stage] = jct.tolist()
        line = f"{args.variant} {stage}: test JCT {jct.mean():,.1f} ± {jct.std():,.1f} min, per seed "
        line += f"{np.round(jct.mean(axis=1)).tolist()}"
        if args.diagnose:
            keys = jax.random.split(jax.random.key(12345), cfg.num_seeds)
            d = {k: np.asarray(v).tolist() for k, v in jax.device_get(diagnose(runner, keys)).items()}
            for k in ("entropy", "approx_kl", "clip_frac") if metrics is not None else ():
                d[k] = np.asarray(metrics[k]).mean(axis=-1).tolist()  # the chunk's mean, per seed
            diag[stage] = d
            line += "\n    " + "  ".join(f"{k} {np.mean(v):.3g}" for k, v in d.items())
        print(f"{line} ({time.perf_counter() - t0:.0f} s)", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                payload = {"variant": args.variant, "overrides": args.set, "jct": out}
                json.dump(payload | ({"diagnostics": diag} if args.diagnose else {}), f)

    runner = init(training_keys(cfg), train_params)
    if mcfg.imitation_updates:
        runner, _ = warm_start(runner, train_params)
    record("warm_start" if mcfg.imitation_updates else "init", runner)
    for stage in range(1, args.stages + 1):
        runner, metrics = chunk(runner, train_params)
        record(f"update_{stage * args.every}", runner, metrics)


if __name__ == "__main__":
    main()
