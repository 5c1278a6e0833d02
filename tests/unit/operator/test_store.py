"""The operator's store: newer writes win, and the per-Episode and per-pool pod indexes
follow relabels."""

from __future__ import annotations

from typing import Any

from a01gym.operator import labels
from a01gym.operator.store import Store


def _pod(name: str, rv: str, uid: str = "pod-uid", **pod_labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": uid, "resourceVersion": rv, "labels": pod_labels},
        "status": {"phase": "Running"},
    }


def test_pods_of_episode_follows_claims_relabels_and_drops() -> None:
    store = Store()
    store.put_pod(_pod("p1", "1", **{labels.STATE: labels.STATE_IDLE}))
    assert store.pods_of_episode("e1") == []
    store.put_pod(_pod("p1", "2", **{labels.EPISODE_UID: "e1"}))
    store.put_pod(_pod("p2", "3", uid="u2", **{labels.EPISODE_UID: "e1"}))
    assert [p.name for p in store.pods_of_episode("e1")] == ["p1", "p2"]
    store.put_pod(_pod("p1", "4", **{labels.EPISODE_UID: "e2"}))
    assert [p.name for p in store.pods_of_episode("e1")] == ["p2"]
    assert [p.name for p in store.pods_of_episode("e2")] == ["p1"]
    store.drop_pod("p2", "u2")
    assert store.pods_of_episode("e1") == []


def test_an_older_event_never_overwrites_a_newer_write() -> None:
    store = Store()
    store.put_pod(_pod("p1", "5", **{labels.EPISODE_UID: "e1"}))
    store.put_pod(_pod("p1", "4", **{labels.STATE: labels.STATE_IDLE}))
    assert [p.name for p in store.pods_of_episode("e1")] == ["p1"]
    assert store.pods["p1"].resource_version == "5"


def test_a_pods_episode_is_found_by_name_and_checked_by_uid() -> None:
    store = Store()
    episode = {"metadata": {"name": "ep-1", "uid": "e1", "resourceVersion": "1"}}
    store.put_object(store.episodes, episode)
    bound = _pod("p1", "2", **{labels.EPISODE_UID: "e1"})
    bound["metadata"]["annotations"] = {labels.ANNOTATION_EPISODE_NAME: "ep-1"}
    assert store.episode_of(store.put_pod(bound)) is episode
    # Same name, other incarnation (deleted and re-created): not this pod's Episode.
    stale = _pod("p2", "3", uid="u2", **{labels.EPISODE_UID: "e0"})
    stale["metadata"]["annotations"] = {labels.ANNOTATION_EPISODE_NAME: "ep-1"}
    assert store.episode_of(store.put_pod(stale)) is None
    assert store.episode_of(store.put_pod(_pod("p3", "4", uid="u3"))) is None


def test_pods_of_pool_follows_creates_relabels_and_drops() -> None:
    store = Store()
    store.put_pod(_pod("a-1", "1", uid="u1", **{labels.POOL: "a"}))
    store.put_pod(_pod("a-2", "2", uid="u2", **{labels.POOL: "a"}))
    store.put_pod(_pod("cold", "3", uid="u3", **{labels.EPISODE_UID: "e1"}))
    assert sorted(p.name for p in store.pods_of_pool("a")) == ["a-1", "a-2"]
    store.put_pod(_pod("a-1", "4", uid="u1", **{labels.POOL: "b"}))
    assert [p.name for p in store.pods_of_pool("a")] == ["a-2"]
    assert [p.name for p in store.pods_of_pool("b")] == ["a-1"]
    store.drop_pod("a-2", "u2")
    store.drop_pod("a-1")
    assert list(store.pods_of_pool("a")) == list(store.pods_of_pool("b")) == []
