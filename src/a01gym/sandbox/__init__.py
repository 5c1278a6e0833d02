"""Per-episode sandboxes: the supervisor inside, the backends that create them outside.

``supervisor`` (the logic) and ``control`` (its HTTP transport) run *inside* a sandbox;
``zygote`` and ``isolation`` create sandboxes on one machine; ``local`` is the host-side
backend with its warm ``pool``; ``client`` talks to a supervisor; ``runner`` runs declarative
tests through a client; ``verification`` scores a candidate on a fresh sandbox.
"""
