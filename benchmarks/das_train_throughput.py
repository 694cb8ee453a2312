"""MAPPO training throughput of the DAS variants on the GPU-cloud env (Small cluster, paper networks:
e = 64, h = 4, τ = 8): env calls/s and decisions/s *during training*, seeds vmapped in one program.

    python benchmarks/das_train_throughput.py --variants da,das --seeds 1 --json results.json

Each record times one jitted chunk of --updates MAPPO updates (rollout of --num-envs × --num-steps calls per
seed, GAE, 4 epochs × 4 minibatches): one warm-up (compile) run, then the median of --repeats runs. The env
splits forwards longer than two events (`max_forward_events: 2`), so decisions/s counts only deciding calls.
"""

from __future__ import annotations

import argparse
import json

from jaxsched.agents.das import DASAgent, DASAgentConfig
from jaxsched.core.threads import single_threaded_blas
from jaxsched.experiments.throughput import default_gpu_cloud_setup, measure_mappo


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variants", default="da,das", help="DAS presets: da, da_mc, da_rwgp, das")
    p.add_argument("--seeds", default="1", help="seed counts (vmapped)")
    p.add_argument("--cluster", choices=("small", "medium", "large"), default="small")
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--num-steps", type=int, default=64)
    p.add_argument("--updates", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    single_threaded_blas()  # as the CLI trains (core/threads.py)
    env, params = default_gpu_cloud_setup(a.cluster, max_forward_events=2)
    records = []
    for variant in a.variants.split(","):
        for seeds in (int(s) for s in a.seeds.split(",")):
            agent = DASAgent.for_env(DASAgentConfig.preset(variant), env)
            rec = measure_mappo(
                env, params, agent, variant, seeds, a.num_envs, a.num_steps, a.updates, a.repeats
            )
            records.append(rec)
            print(
                f"{rec['agent']:>14} seeds {seeds}: {rec['env_steps_per_s']:>9,.0f} env calls/s "
                f"({rec['decisions_per_s']:,.0f} decisions/s, {rec['updates_per_s']:.2f} updates/s)  "
                f"compile {rec['compile_s']:.1f}s  ({rec['platform']})",
                flush=True,
            )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(records, f, indent=2)


if __name__ == "__main__":
    main()
