"""Every label, annotation and finalizer key the operator reads or writes, in one place.

All keys sit under ``a01gym.dev/`` so they can never collide with a user's or another
operator's keys, and so the operator can strip them from anything a user supplies.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ANNOTATION_CLAIMED_TIME",
    "ANNOTATION_EPISODE_NAME",
    "COMPONENT",
    "COMPONENT_SANDBOX",
    "COMPONENT_TOKEN",
    "CREATED_BY",
    "EPISODE_UID",
    "MANAGED_BY",
    "MANAGED_BY_VALUE",
    "POOL",
    "PREFIX",
    "SANDBOX_SELECTOR",
    "STATE",
    "STATE_CLAIMED",
    "STATE_IDLE",
    "TOKEN_OF_POD",
]

PREFIX: Final = "a01gym.dev/"

COMPONENT: Final = PREFIX + "component"
"""What an object is: ``sandbox`` (a pod) or ``sandbox-token`` (its Secret)."""
COMPONENT_SANDBOX: Final = "sandbox"
COMPONENT_TOKEN: Final = "sandbox-token"

POOL: Final = PREFIX + "pool"
"""The SandboxPool a pod was made for (kept after a claim, for accounting)."""
STATE: Final = PREFIX + "state"
"""``idle`` (in the pool, claimable) or ``claimed`` (bound to an Episode)."""
STATE_IDLE: Final = "idle"
STATE_CLAIMED: Final = "claimed"

EPISODE_UID: Final = PREFIX + "episode-uid"
"""uid of the Episode a pod is bound to: the binding's source of truth (names can be reused,
and names longer than 63 characters are not valid label values)."""
TOKEN_OF_POD: Final = PREFIX + "pod"
"""On a token Secret: the pod it belongs to."""
CREATED_BY: Final = PREFIX + "created-by"
"""On an Episode: who made it (``gateway``, or unset for ``kubectl``)."""

MANAGED_BY: Final = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE: Final = "a01gym-operator"

ANNOTATION_EPISODE_NAME: Final = PREFIX + "episode"
ANNOTATION_CLAIMED_TIME: Final = PREFIX + "claimed-time"

SANDBOX_SELECTOR: Final = {COMPONENT: COMPONENT_SANDBOX}
"""Selects every sandbox pod (NetworkPolicies, the operator's pod watch)."""
