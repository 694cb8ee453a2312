"""The shared experiment layer: configs, chunked training with checkpoints and resume (`train`),
evaluation, paired statistics (`stats`), reports and plots, calibration against the papers' numbers
(`calibration`) and the claims page (`claims`). It names and imports no system (docs/architecture.md,
"The shared experiment layer")."""
