"""The OSDEC config (`kind: osdec`): its sections and how a run is built from them.

    kind: osdec
    name: osdec_table1    # run name; each learner writes out_dir/name/<learner>
    seed: 0               # root of the training seeds (the same seeds for every learner: paired)
    num_seeds: 3
    env:, workload:   the cloud and its episodes (`envs.deferrable.setup`: fields, banks, the trace)
    agent:    {learners: [osdec, aux_l, aux_h, ppo_att, ppo_mlp, pointer, reinforce], embed, layers, heads,
               ff, aux_hidden, aux_dim, aux_coef, capacity_norm}
    ppo:      {any PPOConfig field}   (defaults: `osdec_ppo_config()`, the paper's Table 3)
    eval:     {episodes, baselines, seed, greedy}

`build_osdec(cfg)` makes the env and the training and held-out test banks (`envs.deferrable.setup`).

The learners (Table 1's learned rows) are injected networks (`nn.osdec`) trained by the project's PPO:
  osdec     the paper's agent: attention encoder, high- and low-level auxiliary features
  aux_l     PPO+Att+Aux_L: low-level features only
  aux_h     PPO+Att+Aux_H: high-level features only
  ppo_att   PPO+Att: no auxiliary module
  ppo_mlp   PPO: the fixed-length MLP over the flattened tokens, no auxiliary module
  pointer   PointerNet: an LSTM over the jobs in submit order and one pointer step, no auxiliary module
  reinforce REINFORCE: OSDEC's network, trained by the policy gradient with a learned baseline instead of
            PPO — one full-batch step per batch (the ratio is then 1, so PPO's clipping never acts) on
            Monte-Carlo returns (λ = 1), `LEARNER_PPO` (the paper does not say which baseline; Williams'
            REINFORCE allows one, and without it the 2,048-step batches' returns would swamp the gradient)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

from jaxsched.agents.ppo import PPOConfig
from jaxsched.core.checks import choices, positive
from jaxsched.envs.deferrable.setup import DeferrableSetup, build_params
from jaxsched.experiments.config import ExperimentConfig, SampledEval
from jaxsched.policies.deferrable import HEURISTICS

KIND = "osdec"
# learner -> (encoder, aux_high, aux_low)
LEARNERS = {
    "osdec": ("attention", True, True),
    "aux_l": ("attention", False, True),
    "aux_h": ("attention", True, False),
    "ppo_att": ("attention", False, False),
    "ppo_mlp": ("mlp", False, False),
    "pointer": ("pointer", False, False),
    "reinforce": ("attention", True, True),
}
# learner -> PPO settings it overrides (the rest are the config's `ppo` section)
LEARNER_PPO = {"reinforce": {"update_epochs": 1, "num_minibatches": 1, "gae_lambda": 1.0}}
BASELINES = (*HEURISTICS, "random")


def osdec_ppo_config(**overrides) -> PPOConfig:
    """Table 3: batch 2,048 (32 envs × 64 steps), minibatch 64, policy lr 1e-4 → 1e-5, value lr 2e-4 →
    2e-5, multi-task lr 1e-2 → 1e-3, γ 0.99. The paper gives no epoch count, clip or λ: PPO's usual 4,
    0.2, 0.95. Rewards × 0.01 so that returns are O(10) for the critic (the paper does not say)."""
    base = dict(num_envs=32, num_steps=64, total_updates=500, updates_per_chunk=50, update_epochs=4,
                num_minibatches=32, normalize_obs=False, reward_scale=0.01, gamma=0.99, ent_coef=0.0,
                group_lrs=(("policy", 1e-4, 1e-5), ("value", 2e-4, 2e-5), ("aux", 1e-2, 1e-3)))  # fmt: skip
    return PPOConfig(**(base | overrides))


@dataclass(frozen=True)
class AgentSection:
    """The learners trained, one run each (module docstring), and the network sizes (`nn.osdec`)."""

    learners: tuple[str, ...] = ("osdec",)
    embed: int = 64
    layers: int = 2
    heads: int = 1
    ff: int = 128
    aux_hidden: int = 32
    aux_dim: int = 5
    aux_coef: float = 10.0
    capacity_norm: float = 32.0

    def __post_init__(self):
        choices(self.learners, "agent.learners", LEARNERS, "learner", nonempty=True)
        positive(self, "agent", ("capacity_norm",))
        try:
            self.net_config("osdec")
        except ValueError as e:
            raise ValueError(str(e).replace("osdec.", "agent.")) from None

    def net_config(self, learner: str):
        from jaxsched.nn.osdec import OSDECNetConfig

        encoder, high, low = LEARNERS[learner]
        return OSDECNetConfig(self.embed, self.layers, self.heads, self.ff, encoder, high, low,
                              self.aux_hidden, self.aux_dim, self.aux_coef, self.capacity_norm)  # fmt: skip

    def ppo_config(self, ppo: PPOConfig, learner: str) -> PPOConfig:
        """The config's `ppo` section with `learner`'s overrides (`LEARNER_PPO`)."""
        return dataclasses.replace(ppo, **LEARNER_PPO.get(learner, {}))

    def network(self, learner: str):
        from jaxsched.nn.osdec import OSDECAgent

        return OSDECAgent(self.net_config(learner))


@dataclass(frozen=True)
class EvalSection(SampledEval):
    """Held-out evaluation: each learner's policy (greedy: the paper evaluates "without exploration
    noise") and the baselines on the first `episodes` test episodes (null: all)."""

    BASELINES: ClassVar[tuple[str, ...]] = BASELINES

    baselines: tuple[str, ...] = BASELINES


@dataclass(frozen=True)
class OSDECConfig(DeferrableSetup, ExperimentConfig):
    """An OSDEC experiment (`kind: osdec`): the cloud's env and workload sections and these."""

    KIND: ClassVar[str] = KIND

    agent: AgentSection = field(default_factory=AgentSection)
    ppo: PPOConfig = field(default_factory=osdec_ppo_config)
    eval: EvalSection = field(default_factory=EvalSection)

    def __post_init__(self):
        super().__post_init__()
        if self.ppo.normalize_obs:
            raise ValueError("ppo.normalize_obs must be false: the OSDEC networks scale their own inputs")


def make_env(cfg: OSDECConfig):
    from jaxsched.envs.deferrable import DeferrableEnv

    return DeferrableEnv(cfg.env.deferrable_config())


def build_osdec(cfg: OSDECConfig):
    """`(env, train_params, test_params)` for `cfg` (`envs.deferrable.setup`)."""
    env = make_env(cfg)
    return env, *(build_params(env, cfg.env, cfg.workload, train) for train in (True, False))
