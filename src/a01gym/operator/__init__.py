"""The Kubernetes operator: Episodes claim hardened sandbox pods from warm SandboxPools.

``crd`` is the source of truth for the CRDs (the chart's copies are checked against it);
``labels`` holds every label and annotation key; ``builders`` are pure manifest builders;
``store`` is the in-memory view fed by watch events; ``reconciler`` routes those events to
``episodes`` (bind, Ready, terminal phases), ``pools`` (keep them full) and ``sweeps`` (TTL,
orphans), which create and delete pods through ``sandboxes``; ``handlers`` are the thin kopf
handlers; ``runner`` starts kopf; ``metrics`` is what its name says (settings live in
:mod:`a01gym.config`). Kubernetes API calls go through
:class:`a01gym.sandbox.host.kube_client.KubeClient`, shared with the gateway's backend.
"""
