"""Root keys by purpose. Training seeds are `jax.random.split(key(seed), num_seeds)`, i.e.
`fold_in(key(seed), i)` for small i. Workload and evaluation keys fold a large purpose tag into their own
seed instead, so no key is ever used twice, even when `seed`, `bank_seed`, `test_seed` and `eval.seed` are
equal."""

from __future__ import annotations

import jax

TRAIN_BANK_TAG = 1_000_003
TEST_BANK_TAG = 1_000_033
EVAL_TAG = 1_000_037
VALIDATION_TAG = 1_000_039


def purpose_key(seed: int, tag: int) -> jax.Array:
    """The root key of one purpose (a workload bank, the evaluation episodes): `fold_in(key(seed), tag)`."""
    return jax.random.fold_in(jax.random.key(seed), tag)
