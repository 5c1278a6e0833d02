"""Per-episode sandboxes, split by the process the code runs in.

``inside/`` runs in a sandbox: the machine-wide ``zygote`` forks each sandbox
(``namespaces``, ``confinement``, ``cow``, ``warmup``, ``preloads``, ``spare_cpu``) and its
``supervisor`` (the logic: ``workspace``, ``app_process``) behind ``control`` (its HTTP API);
the app runs under ``appserver`` (``bytecode``, ``tracebacks``), started by ``app_launcher``.

``host/`` runs in the gateway, the operator and the factory: the backends (``local`` with its
warm pool, ``pool_target``, ``readiness`` and ``admission``; ``docker`` running what
``container`` describes; ``kubernetes`` over ``episode_watch``, ``kube_client`` and
``kube_credentials``, which the operator shares), all handing out ``backend`` handles whose
``client`` speaks the control API; ``escapes`` tries to leave a sandbox. Running the hidden
tests through that client is :mod:`a01gym.grading`, a layer above.

Shared by both, directly here: ``protocol`` (the control API's wire models), ``edits`` (what
``edit_file`` does to a file's text; the gateway replays it too), ``layout`` (where
things live in a sandbox directory), ``http11`` (the h11 client and server both hops use) and
``isolation`` (what this machine can isolate, with ``landlock``). An import-linter contract in
pyproject.toml keeps the inside from importing the host side.
"""
