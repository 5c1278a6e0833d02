"""The feedback loop: episode logs → failure analysis → curriculum weights and factory orders.

:mod:`~a01gym.feedback.evidence` reads the logs, :mod:`~a01gym.feedback.analysis` classifies
every failed episode per family × difficulty, :mod:`~a01gym.feedback.weights` writes the
sampling weights a running gateway reloads at its next reset, and :mod:`~a01gym.feedback.jobs`
orders new scenarios for weak cells (``a01gym factory build --from-feedback``). The held-out
eval split is never reweighted nor rebuilt.
"""
