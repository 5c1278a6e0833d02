"""Grading: what turns a submitted workspace into a score, from the hidden tests to the verdicts.

A submit, followed through the code (``docs/architecture.md`` has the full trace):

1. :func:`a01gym.env.terminal.finish` ends the episode and calls
   :func:`a01gym.env.grading.grade`, the episode's side: its changed files, a grading spare,
   the routes the agent removed.
2. :func:`verification.verify` loads the candidate workspace into a *fresh* sandbox and runs
   the hidden tests in order (regressions first, guards last) under a deadline.
3. :mod:`runner` runs each declarative test through the supervisor's client: tests are data,
   nothing from a bundle executes on this side.
4. :mod:`scoring` turns the results into security × regression, failing closed (pure).
5. :mod:`verdicts` names each result from the fix's side (pure): what ``run_tests``, the reward
   breakdown and ``verification.json`` show.
6. Back in env, :mod:`a01gym.env.reward` subtracts the penalties and :mod:`a01gym.env.shaping`
   reports the expert shaping apart.

The factory's gates (:mod:`a01gym.factory.gates`, :mod:`a01gym.factory.determinism`,
:mod:`a01gym.factory.probe`) call the same :func:`verification.verify`, and the visible
``run_tests`` tool the same :mod:`runner`.

Why it is a package of its own, in a layer between ``factory | operator`` and ``sandbox``
(pyproject.toml): the factory grades its gold patches with it, so it must sit below the
factory; it drives sandboxes through the host side's client, so above ``sandbox``. Steps 1 and
6 stay in ``env``: they build the OpenEnv wire models (``RewardBreakdown`` in
:mod:`a01gym.env.models`) and read the episode and its warm spares, all of which live in
``env``, one layer up. Nothing here runs inside a sandbox: the app under test does, and these
modules only talk to its supervisor.
"""
