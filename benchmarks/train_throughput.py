"""PPO training throughput on the HPC (Deep Back-Filling) env: env steps/s *during training*.

    python benchmarks/train_throughput.py --seeds 1,8 --hidden 1024,512,256 --hidden 64,64 --json results.json

Each setting times one jitted chunk of --updates PPO updates (rollout of --num-envs × --num-steps decisions
per seed, GAE, --epochs epochs of minibatches of --minibatch-size) with the seeds `vmap`ped in one program:
one warm-up (compile) run, then the median of --repeats runs. Records: {"agent", "env", "hidden", "seeds",
"num_envs", "num_steps", "env_steps_per_s", "updates_per_s" (both summed over seeds), "compile_s",
"device", "platform", ...}. The env is the 256-core cluster with a 9 + 1 window over a Lublin bank.
The defaults suit a 2-core CPU, where the DBF network at 8 seeds dominates the run; on a GPU, pass e.g.
--updates 8 --num-envs 1024 for longer timed chunks.
"""

from __future__ import annotations

import argparse

from jaxsched.experiments.throughput import train_throughput


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1,8", help="seed counts to measure (vmapped in one program)")
    p.add_argument(
        "--hidden",
        action="append",
        default=None,
        help="network widths, e.g. 1024,512,256 (repeat the flag for several; default: the DBF "
        "network 1024,512,256 and 64,64)",
    )
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--num-steps", type=int, default=64, help="decisions per env per update")
    p.add_argument(
        "--updates", type=int, default=2, help="PPO updates per timed chunk (2 keeps a CPU run to ~5 min)"
    )
    p.add_argument("--repeats", type=int, default=3, help="timed runs per setting (median reported)")
    p.add_argument("--minibatch-size", type=int, default=128, help="the DBF paper's minibatch (128)")
    p.add_argument("--epochs", type=int, default=4, help="PPO epochs per update")
    p.add_argument("--json", default=None, help="write records here")
    a = p.parse_args()
    hiddens = [tuple(int(w) for w in h.split(",")) for h in (a.hidden or ["1024,512,256", "64,64"])]
    train_throughput(
        hiddens,
        [int(s) for s in a.seeds.split(",")],
        a.num_envs,
        a.num_steps,
        a.updates,
        a.repeats,
        a.minibatch_size,
        a.epochs,
        a.json,
    )


if __name__ == "__main__":
    main()
