"""Per-episode sandboxes: the supervisor inside, the backends that create them outside.

Inside a sandbox: ``supervisor`` (the logic: ``workspace``, ``app_process``, ``http11``)
behind ``control`` (its HTTP transport, on ``server``). On one machine: ``zygote`` forks
sandboxes with ``isolation`` (``landlock``, namespaces, uids, rlimits) for the ``local``
backend and its warm pool. On a cluster: the ``kubernetes`` backend, waiting on an
``episode_watch``, over ``kube_client`` and ``kube_credentials`` (which the operator shares).
Either way callers use ``backend`` handles and the ``client``; ``runner`` runs declarative
tests through a client and ``verification`` scores a candidate on a fresh sandbox.
"""
