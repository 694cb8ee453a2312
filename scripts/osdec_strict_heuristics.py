"""OSDEC's Table 1 preset: the first-fit list heuristics (`policies.deferrable`) against strict ones that stop
at the first job that does not fit (head-of-line blocking), as ratios to FIFO on the test episodes
(docs/results/calibration.md, OSDEC).

    python scripts/osdec_strict_heuristics.py
"""

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.experiments.evaluate import eval_episode_keys, run_policies
from jaxsched.policies.deferrable import BIG, ORDER_KEYS, first_fit
from jaxsched.systems import load_run_config
from jaxsched.systems.osdec.config import build_osdec


def strict_fit(obs, order_key):
    """`bool[P]`: first fit's walk, stopped at the first candidate that does not fit."""
    free0 = obs.capacity - obs.load
    order = jnp.lexsort((obs.p_id, jnp.where(obs.candidate, order_key, BIG)))

    def visit(carry, slot):
        free, blocked = carry
        fits = obs.candidate[slot] & ~blocked & (obs.p_cores[slot] <= free)
        blocked = blocked | (obs.candidate[slot] & ~fits)
        return (free - jnp.where(fits, obs.p_cores[slot], 0), blocked), fits

    _, chosen = jax.lax.scan(visit, (free0, jnp.bool_(False)), order)
    return jnp.zeros_like(obs.candidate).at[order].set(chosen)


def make(name, fit):
    """Heuristic `name`'s order walked by `fit`, as scores."""
    key = ORDER_KEYS[name]
    return lambda params, obs, k: jnp.where(fit(obs, key(obs)), 1.0, -1.0).astype(jnp.float32)


_, cfg = load_run_config("configs/osdec/paper_table1.yaml")
env, _, test = build_osdec(cfg)
n = cfg.workload.test_episodes
keys = eval_episode_keys(cfg.eval.seed, n)
walks = (("", first_fit), ("_strict", strict_fit))
pol = {f"{h}{s}": make(h, f) for h in ("fifo", "sjf", "tetris") for s, f in walks}
out = run_policies(env, test, pol, np.arange(n), keys)
paper = {
    "utilization": {"sjf": 0.940, "tetris": 1.024},
    "delay_penalty": {"sjf": 112.06 / 193.64, "tetris": 282.42 / 193.64},
}
for s in ("", "_strict"):
    for m in ("utilization", "delay_penalty", "total_reward"):
        f = np.mean(out["fifo" + s][m])
        ratios = {h: round(float(np.mean(out[h + s][m]) / f), 3) for h in ("sjf", "tetris")}
        print(s or "_firstfit", m, "fifo", round(float(f), 2), ratios, "paper", paper.get(m))
