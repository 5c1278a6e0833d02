"""Pure builders: sandbox pod hardening, the optimistic-lock claim patch, conditions."""

from __future__ import annotations

from a01gym.operator import builders, labels

OWNER = builders.build_owner_reference("Episode", "e1", "uid-1")


def _pod(**overrides: object) -> dict:
    spec = builders.SandboxPodSpec(image="img", overrides=overrides)
    return builders.build_sandbox_pod(
        name="p", namespace="ns", spec=spec, token_secret="p",
        extra_labels={labels.EPISODE_UID: "uid-1"}, owner=OWNER, active_deadline_s=100,
    )  # fmt: skip


def test_sandbox_pod_is_hardened() -> None:
    pod = _pod()
    spec = pod["spec"]
    container = spec["containers"][0]
    assert spec["automountServiceAccountToken"] is False
    assert spec["activeDeadlineSeconds"] == 100
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/var/run/a01gym"]["readOnly"] is True
    assert "--token-file" in container["args"]
    assert pod["metadata"]["ownerReferences"] == [OWNER]


def test_user_labels_cannot_spoof_operator_labels() -> None:
    pod = _pod(labels={labels.STATE: labels.STATE_IDLE, "team": "red"})
    assert labels.STATE not in pod["metadata"]["labels"]
    assert pod["metadata"]["labels"]["team"] == "red"
    assert pod["metadata"]["labels"][labels.EPISODE_UID] == "uid-1"


def test_claim_patch_is_resource_version_guarded_and_moves_ownership() -> None:
    patch = builders.build_claim_patch(
        resource_version="42", episode_name="e1", episode_uid="uid-1", now="t", active_deadline_s=9
    )
    meta = patch["metadata"]
    assert meta["resourceVersion"] == "42"
    assert meta["labels"] == {labels.STATE: labels.STATE_CLAIMED, labels.EPISODE_UID: "uid-1"}
    assert meta["ownerReferences"] == [OWNER]
    assert patch["spec"] == {"activeDeadlineSeconds": 9}


def test_condition_transition_time_moves_only_on_a_flip() -> None:
    first = builders.build_condition(
        type_="Ready", status=False, reason="A", message="", generation=1, now="t1"
    )
    same = builders.build_condition(
        type_="Ready", status=False, reason="B", message="", generation=1, now="t2", previous=first
    )
    flipped = builders.build_condition(
        type_="Ready", status=True, reason="C", message="", generation=1, now="t3", previous=same
    )
    assert same[0]["lastTransitionTime"] == "t1"
    assert flipped[0]["lastTransitionTime"] == "t3"


def test_token_secret_is_owned_by_the_given_owner_from_the_start() -> None:
    """A cold pod's Secret names its Episode as owner at creation (no second request), and
    never as controller: the Episode's controller-owned object is the pod."""
    owner = builders.build_owner_reference("Episode", "ep", "uid-1")
    secret = builders.build_token_secret(
        name="sbx-uid-1", namespace="ns", token="t", pod_name="sbx-uid-1", owner=owner
    )
    [reference] = secret["metadata"]["ownerReferences"]
    assert (reference["kind"], reference["uid"], reference["controller"]) == (
        "Episode",
        "uid-1",
        False,
    )
    unowned = builders.build_token_secret(name="p", namespace="ns", token="t", pod_name="p")
    assert "ownerReferences" not in unowned["metadata"]
