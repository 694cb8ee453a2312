"""Multi-layer perceptrons and the actor-critic pair built from them (flax.linen)."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

# The logit of a masked action (PPO's masked categorical, `nn.inspector`): finite, so entropies stay NaN-free.
MASKED_LOGIT = -1e9

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "elu": nn.elu}
ACTIVATION_NAMES = tuple(ACTIVATIONS)


def activation(name: str):
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation '{name}'; choose one of {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]


class MLP(nn.Module):
    """`x: f32[..., D] -> f32[..., out]`: dense layers of `hidden` sizes, orthogonal init (√2 gain), then a
    linear head with gain `out_gain` (small for policy logits, 1 for values)."""

    hidden: Sequence[int]
    out: int
    act: str = "tanh"
    out_gain: float = 1.0

    @nn.compact
    def __call__(self, x):
        f = activation(self.act)
        for width in self.hidden:
            x = f(nn.Dense(width, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x))
        return nn.Dense(self.out, kernel_init=nn.initializers.orthogonal(self.out_gain))(x)


class ActorCritic(nn.Module):
    """Policy logits `[..., n_actions]` and state value `[...]` from one observation vector.

    `shared=False` (the DBF paper: separate actor and critic MLPs of the same sizes); `shared=True`
    runs one trunk of `hidden` layers with two linear heads. `value(x)` runs only what the value needs.
    """

    n_actions: int
    hidden: Sequence[int] = (64, 64)
    act: str = "tanh"
    shared: bool = False

    def setup(self):
        if self.shared:
            self.trunk = MLP(self.hidden[:-1], self.hidden[-1], self.act, np.sqrt(2))
            self.actor_head = nn.Dense(self.n_actions, kernel_init=nn.initializers.orthogonal(0.01))
            self.critic_head = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))
        else:
            self.actor = MLP(self.hidden, self.n_actions, self.act, 0.01)
            self.critic = MLP(self.hidden, 1, self.act, 1.0)

    def __call__(self, x):
        if self.shared:
            h = activation(self.act)(self.trunk(x))
            return self.actor_head(h), jnp.squeeze(self.critic_head(h), -1)
        return self.actor(x), jnp.squeeze(self.critic(x), -1)

    def value(self, x):
        if self.shared:
            return jnp.squeeze(self.critic_head(activation(self.act)(self.trunk(x))), -1)
        return jnp.squeeze(self.critic(x), -1)


class VecActorCritic:
    """The default PPO network: `ActorCritic` on the observation's flat feature vector `obs.vec`.

    It has the interface PPO takes by injection (`agents.ppo.PPO(..., network=)`): `init(key, obs)` with
    one observation, `apply(params, obs) -> (logits [B, A], value [B])` and `value(params, obs) -> [B]`
    on a batch (a pytree with a leading axis)."""

    def __init__(self, n_actions: int, hidden: Sequence[int] = (64, 64), act: str = "tanh", shared=False):
        self.module = ActorCritic(n_actions, tuple(hidden), act, shared)

    def init(self, key, obs):
        return self.module.init(key, jnp.zeros_like(obs.vec, jnp.float32))

    def apply(self, params, obs):
        return self.module.apply(params, obs.vec)

    def value(self, params, obs):
        return self.module.apply(params, obs.vec, method=ActorCritic.value)


class ValueMLP(nn.Module):
    """`x: f32[..., G] -> value f32[...]`: a state-value MLP (MAPPO's default centralized critic)."""

    hidden: Sequence[int] = (256, 256)
    act: str = "tanh"

    @nn.compact
    def __call__(self, x):
        return jnp.squeeze(MLP(self.hidden, 1, self.act, 1.0)(x), -1)


class QMLP:
    """The default DQN network: an MLP (ReLU) from the flat feature vector to one Q-value per action.

    The interface DQN takes by injection (`agents.dqn.DQN(..., network=)`): `init(key, vec [D])` and
    `apply(params, vec [B, D]) -> q [B, A]`."""

    def __init__(self, n_actions: int, hidden: Sequence[int] = (128, 128), act: str = "relu"):
        self.module = MLP(tuple(hidden), n_actions, act, 1.0)

    def init(self, key, vec):
        return self.module.init(key, jnp.zeros_like(vec, jnp.float32))

    def apply(self, params, vec):
        return self.module.apply(params, vec)
