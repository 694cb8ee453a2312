"""Flax (linen) networks: the generic MLPs (`mlp`) every algorithm may default to, and each paper's own
networks (`das`, `rwgp`, `sced2`, `idle_dag` with `gnn`, `osdec`, `inspector`, `grouping`), which reach
the algorithms by injection (docs/architecture.md, "The layers")."""
