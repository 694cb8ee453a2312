"""Training algorithms on the accelerator with Optax: policy-gradient pieces (`pg`), PPO (`ppo`), MAPPO
(`mappo`), REINFORCE (`reinforce`), DQN (`dqn`), imitation (`imitation`), and the papers' agents built on
them (`das`, `dbf`). An algorithm knows no env, policy or paper's network: those are injected
(docs/architecture.md, "Algorithms and agents")."""
