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


def _listing(rv: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv}, "items": list(items)}


def test_a_list_older_than_a_delete_does_not_bring_the_pod_back() -> None:
    """A resync LIST sent before a pod's delete, answered after its DELETED event, must not
    resurrect it (the orphan sweep would delete it a second time)."""
    store = Store()
    store.put_pod(_pod("p1", "5", uid="u1", **{labels.EPISODE_UID: "e1"}))
    epoch = store.begin_resync()
    store.drop_pod("p1", "u1")  # the DELETED event, while the LIST is in flight
    store.resync_pods(_listing("6", _pod("p1", "5", uid="u1", **{labels.EPISODE_UID: "e1"})))
    store.end_resync(epoch)
    assert "p1" not in store.pods
    assert store.pods_of_episode("e1") == []
    # A late answer to an earlier write does not bring it back either.
    store.put_pod(_pod("p1", "5", uid="u1"))
    assert "p1" not in store.pods
    # The tombstone is forgotten once a LIST sent after the delete has been folded in.
    later = store.begin_resync()
    store.resync_pods(_listing("9"))
    store.end_resync(later)
    store.put_pod(_pod("p1", "10", uid="u1"))
    assert "p1" in store.pods


def test_a_resync_keeps_what_was_written_after_its_list() -> None:
    """A pod claimed (or created) after the LIST's snapshot is missing from it but live: a
    resync that dropped it would let its Episode claim a second pod."""
    store = Store()
    store.put_pod(_pod("old", "3", uid="u0"))
    store.put_pod(_pod("claimed", "12", uid="u1", **{labels.EPISODE_UID: "e1"}))
    epoch = store.begin_resync()
    store.resync_pods(_listing("10"))
    store.end_resync(epoch)
    assert "old" not in store.pods  # gone from the API before the snapshot: dropped
    assert [p.name for p in store.pods_of_episode("e1")] == ["claimed"]


def test_objects_follow_the_same_rules_as_pods() -> None:
    store = Store()
    episode = {"metadata": {"name": "ep", "uid": "e1", "resourceVersion": "4"}}
    newer = {"metadata": {"name": "new", "uid": "e2", "resourceVersion": "11"}}
    store.put_object(store.episodes, episode)
    store.put_object(store.episodes, newer)
    epoch = store.begin_resync()
    store.drop_object(store.episodes, "ep", "e1")
    store.resync_objects(store.episodes, _listing("10", episode))
    store.end_resync(epoch)
    assert list(store.episodes) == ["new"]
