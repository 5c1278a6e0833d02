"""Per-episode sandboxes: the supervisor inside, the backends that create them outside.

Inside a sandbox: ``supervisor`` (the logic: ``workspace``, ``app_process``, ``http11``)
behind ``control`` (its HTTP API, served by ``http11``'s h11 server); the app runs under
``appserver``, started by ``app_launcher``. On one machine: ``zygote`` forks sandboxes with
``isolation`` (``landlock``, namespaces, uids, rlimits) for the ``local`` backend and its warm
pool. In containers: the ``docker`` backend runs what ``container`` describes. On a cluster:
the ``kubernetes`` backend, waiting on an ``episode_watch``, over ``kube_client`` and
``kube_credentials`` (which the operator shares).
Either way callers use ``backend`` handles and the ``client``; ``runner`` runs declarative
tests through a client and ``verification`` scores a candidate on a fresh sandbox.
"""
