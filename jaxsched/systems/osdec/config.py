"""The OSDEC config (`kind: osdec`): its sections and how a run is built from them.

    kind: osdec
    name: osdec_table1    # run name; each learner writes out_dir/name/<learner>
    seed: 0               # root of the training seeds (the same seeds for every learner: paired)
    num_seeds: 3
    env:      {pending_slots, running_slots, defer_negative, history, w_delay, w_violation}
    workload: {preset, realtime, horizon, rate, base_capacity, max_lead, max_window, amplitude, noise,
               train_episodes, test_episodes, bank_seed, test_seed,
               trace, trace_test_from_day, trace_step_minutes, trace_stride, trace_fraction,
               trace_machine_cores, trace_total_cores}
    agent:    {learners: [osdec, aux_l, aux_h, ppo_att, ppo_mlp, pointer, reinforce], embed, layers, heads,
               ff, aux_hidden, aux_dim, aux_coef, capacity_norm}
    ppo:      {any PPOConfig field}   (defaults: `osdec_ppo_config()`, the paper's Table 3)
    eval:     {episodes, baselines, seed, greedy}

`build_osdec(cfg)` makes the env and the training and held-out test banks: the same generator
(`workloads.deferrable`, the preset with the section's overrides) with different seeds, which must differ —
the test episodes are never seen in training (the paper may have evaluated on its training trajectories;
we do not). With `workload.trace` (a path to the Azure packing trace, `workloads.azure_packing`) the
episodes come from the trace instead, split in time: training from the days before
`trace_test_from_day`, testing from that day on (the 14-day trace: 11 days and 3 by default); the
generator's `horizon`, `max_lead`, `max_window` and `realtime` apply, `train_episodes` / `test_episodes`
do not (the trace's days set the counts).

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
from jaxsched.core.checks import at_least, choices, positive
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
class EnvSection:
    """The deferrable-job cloud (`envs.deferrable`) and Eq. 6's weights (Table 3: ω1 = 2, ω2 = 10)."""

    pending_slots: int = 64
    running_slots: int = 48
    defer_negative: bool = False
    history: int = 8
    w_delay: float = 2.0
    w_violation: float = 10.0

    def __post_init__(self):
        try:
            self.deferrable_config()
        except ValueError as e:
            raise ValueError(str(e).replace("DeferrableConfig.", "env.")) from None
        for name in ("w_delay", "w_violation"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"env.{name} must be >= 0, got {getattr(self, name)}")

    def deferrable_config(self):
        from jaxsched.envs.deferrable import DeferrableConfig

        return DeferrableConfig(self.pending_slots, self.running_slots, self.defer_negative, self.history)


@dataclass(frozen=True)
class WorkloadSection:
    """Generated episodes (`workloads.deferrable`): a preset (default, core1-3, duration1-3) and the
    generator's knobs that a config may override (null: the preset's)."""

    preset: str = "default"
    realtime: bool = False
    horizon: int = 48
    rate: float | None = None
    base_capacity: float | None = None
    max_lead: int | None = None
    max_window: int | None = None
    amplitude: float | None = None  # the capacity curve's daily swing, a share of base (null: the preset's)
    noise: float | None = None  # the capacity noise's std, cores (null: the preset's)
    train_episodes: int = 256
    test_episodes: int = 64
    bank_seed: int = 0
    test_seed: int = 1
    trace: str | None = None  # the Azure packing trace (SQLite or CSV dir): episodes from it
    trace_test_from_day: float = 11.0
    trace_step_minutes: float = 60.0
    trace_stride: int | None = None
    trace_fraction: float = 1.0
    trace_machine_cores: int = 64
    trace_total_cores: float | None = None

    def __post_init__(self):
        at_least(self, "workload", ("train_episodes", "test_episodes"))
        if self.bank_seed == self.test_seed:
            raise ValueError(
                f"workload.test_seed must differ from workload.bank_seed ({self.bank_seed}): the test "
                f"episodes must be unseen"
            )
        try:
            self.generator()
        except ValueError as e:
            raise ValueError(str(e).replace("deferrable workload.", "workload.")) from None
        if not self.trace_test_from_day > 0:
            raise ValueError(f"workload.trace_test_from_day must be > 0, got {self.trace_test_from_day}")
        try:
            self.trace_config(train=True)
        except ValueError as e:
            raise ValueError(str(e).replace("azure trace config: ", "workload.trace_")) from None

    def generator(self):
        from jaxsched.workloads.deferrable import preset

        knobs = {"rate": self.rate, "base_capacity": self.base_capacity, "max_lead": self.max_lead,
                 "max_window": self.max_window, "amplitude": self.amplitude, "noise": self.noise}  # fmt: skip
        over = {k: v for k, v in knobs.items() if v is not None}
        return preset(self.preset, horizon=self.horizon, realtime=self.realtime, **over)

    def trace_config(self, train: bool):
        """The trace loader's settings for the training (days before `trace_test_from_day`, windows drawn
        with `bank_seed`) or the test episodes (from that day on, `test_seed`)."""
        from jaxsched.workloads.azure_packing import AzurePackingConfig

        gen = self.generator()
        days = dict(start_day=0.0, days=self.trace_test_from_day) if train else dict(
            start_day=self.trace_test_from_day, days=None)  # fmt: skip
        return AzurePackingConfig(
            step_minutes=self.trace_step_minutes, horizon=self.horizon, stride=self.trace_stride,
            machine_cores=self.trace_machine_cores, total_cores=self.trace_total_cores,
            fraction=self.trace_fraction, max_lead=gen.max_lead, max_window=gen.max_window,
            realtime=self.realtime, seed=self.bank_seed if train else self.test_seed, **days,
        )  # fmt: skip

    @property
    def day(self) -> int:
        """Steps per day (the env's `day_phase` period)."""
        return self.generator().day if self.trace is None else round(24 * 60 / self.trace_step_minutes)


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
class OSDECConfig(ExperimentConfig):
    """An OSDEC experiment (`kind: osdec`)."""

    KIND: ClassVar[str] = KIND
    PATH_KEYS: ClassVar[tuple[str, ...]] = ("workload.trace",)

    env: EnvSection = field(default_factory=EnvSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)
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
    """`(env, train_params, test_params)` for `cfg`."""
    from jaxsched.workloads.azure_packing import load_azure_packing
    from jaxsched.workloads.deferrable import generate_bank

    w, e = cfg.workload, cfg.env
    env = make_env(cfg)

    def params(train: bool):
        if w.trace is not None:
            bank, _ = load_azure_packing(w.trace, w.trace_config(train))
        elif train:
            bank = generate_bank(w.generator(), w.train_episodes, w.bank_seed)
        else:
            bank = generate_bank(w.generator(), w.test_episodes, w.test_seed)
        return env.make_params(bank, day=w.day, w_delay=e.w_delay, w_violation=e.w_violation)

    return env, params(train=True), params(train=False)
