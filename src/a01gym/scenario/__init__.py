"""Scenario data: bundle and manifest models, declarative HTTP tests, fixture templates.

Pure data and file reading only; the lowest layer above ``errors``/``config``. The sandbox runs
what is described here, the factory writes it, the environment serves it; scoring the
results of its tests is :mod:`a01gym.grading`.
"""
