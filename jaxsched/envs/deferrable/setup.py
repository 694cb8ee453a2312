"""The deferrable-job cloud's settings and its one builder: `jaxsched.make("osdec*")` and OSDEC configs
both build here.

Two sections, as an OSDEC config spells them:

    env:      {pending_slots, running_slots, defer_negative, history, w_delay, w_violation}
    workload: {preset, realtime, horizon, rate, base_capacity, max_lead, max_window, amplitude, noise,
               train_episodes, test_episodes, bank_seed, test_seed,
               trace, trace_test_from_day, trace_step_minutes, trace_stride, trace_fraction,
               trace_machine_cores, trace_total_cores}

`build_params(env, section, workload, train)`: the training or the held-out test bank's params. Both come
from the same generator (`workloads.deferrable`, the preset with the section's overrides) with different
seeds, which must differ — the test episodes are never seen in training. With `workload.trace` (a path
to the Azure packing trace, `workloads.azure_packing`) the episodes come from the trace instead, split in
time: training from the days before `trace_test_from_day`, testing from that day on (the 14-day trace:
11 days and 3 by default); the generator's `horizon`, `max_lead`, `max_window` and `realtime` apply,
`train_episodes` / `test_episodes` do not (the trace's days set the counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxsched.core.checks import EnvSections, at_least
from jaxsched.envs.deferrable.env import DeferrableConfig


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

    def deferrable_config(self) -> DeferrableConfig:
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


def build_params(env, section: EnvSection, workload: WorkloadSection, train: bool):
    """`env`'s params (a `DeferrableEnv` of `section.deferrable_config()`) of the training (`train`) or
    the held-out test episodes (module docstring)."""
    from jaxsched.workloads.azure_packing import load_azure_packing
    from jaxsched.workloads.deferrable import generate_bank

    w, e = workload, section
    if w.trace is not None:
        bank, _ = load_azure_packing(w.trace, w.trace_config(train))
    elif train:
        bank = generate_bank(w.generator(), w.train_episodes, w.bank_seed)
    else:
        bank = generate_bank(w.generator(), w.test_episodes, w.test_seed)
    return env.make_params(bank, day=w.day, w_delay=e.w_delay, w_violation=e.w_violation)


@dataclass(frozen=True)
class DeferrableSetup(EnvSections):
    """The env and workload sections of an experiment on this cloud (its config derives from it)."""

    PATH_KEYS = ("workload.trace",)

    env: EnvSection = field(default_factory=EnvSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)
