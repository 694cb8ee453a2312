"""What the HPC env's auto-reset costs per step: the DBF env (`jaxsched.make("dbf")`'s setup) timed as it is,
without the auto-reset, and with a reset that draws no random start — one process, the variants interleaved
round by round so that the machine's drift hits them alike.

    python benchmarks/hpc_reset_cost.py --batches 1024,4096 --rounds 3 --json F

The variants without the auto-reset are measurement devices, not environments: "no_reset" returns the
stepped state even after the episode ended (`step_env` alone), "fixed_start" resets every ended episode to
the bank's first start (no `randint`). Under `vmap` the auto-reset runs at every step for every env, taken or
not, so its cost is the gap between "as_is" and "no_reset".

Records: {"variant", "batch", "steps_per_s" (median over rounds of each round's median of --repeats runs),
"rounds_steps_per_s", ...platform}.
"""

from __future__ import annotations

import argparse
import statistics

from jaxsched.envs.hpc import HPCEnv
from jaxsched.experiments.report import write_json
from jaxsched.experiments.throughput import default_hpc_setup, measure_env, platform_info


class _NoReset(HPCEnv):
    """`step` without the auto-reset (measurement only)."""

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = self.step_env(key, state, action, params)
        return obs, state, reward, terminated, truncated, {**info, "done": terminated | truncated}


class _FixedStart(HPCEnv):
    """The auto-reset with a reset that draws nothing: every episode starts at the bank's first start."""

    def reset_env(self, key, params):
        one = params.replace(starts=params.starts[:1], ends=params.ends[:1])
        return super().reset_env(key, one)


VARIANTS = {"as_is": HPCEnv, "no_reset": _NoReset, "fixed_start": _FixedStart}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", default="1024,4096")
    p.add_argument("--steps", type=int, default=256)
    p.add_argument("--repeats", type=int, default=5, help="timed runs per round (the round's median)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds over the variants")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    base, params = default_hpc_setup()
    rates = {(v, int(b)): [] for v in VARIANTS for b in a.batches.split(",")}
    for r in range(a.rounds):
        for (variant, batch), seen in rates.items():
            env = VARIANTS[variant](base.config)
            seen.append(measure_env(env, params, batch, a.steps, a.repeats)["steps_per_s"])
            print(f"round {r}: {variant:>11} batch {batch:>5}: {seen[-1]:>10,.0f} steps/s", flush=True)
    records = [
        {"variant": v, "batch": b, "steps_per_s": statistics.median(s), "rounds_steps_per_s": s,
         "steps": a.steps, "repeats": a.repeats, **platform_info()}
        for (v, b), s in rates.items()
    ]  # fmt: skip
    for rec in records:
        ratio = rec["steps_per_s"] / statistics.median(rates[("as_is", rec["batch"])])
        rate = f"{rec['steps_per_s']:>10,.0f} steps/s"
        print(f"{rec['variant']:>11} batch {rec['batch']:>5}: {rate}  x{ratio:.2f} of as_is")
    if a.json:
        write_json(a.json, records)


if __name__ == "__main__":
    main()
