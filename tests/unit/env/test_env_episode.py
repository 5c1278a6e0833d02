"""The episode's overlay is the agent's diff: what the sandbox's workspace holds, kept without
asking the sandbox."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from a01gym.env import models, tools
from a01gym.env.episode import Episode, StepOutcome
from a01gym.sandbox.host.client import ControlError
from a01gym.sandbox.inside.workspace import Workspace, WorkspaceError
from a01gym.scenario.bundle import Bundle

NOTES = "app/routers/notes.py"


def _episode(bundle: Bundle) -> Episode:
    return Episode(episode_id="e", bundle=bundle, split="train", seed=1, sandbox=None, log=None)


def test_the_overlay_holds_exactly_what_the_sandbox_workspace_holds(
    idor_bundle: Bundle, tmp_path: Path
) -> None:
    workspace = Workspace(tmp_path / "ws", max_file_bytes=1 << 20)
    workspace.load(idor_bundle.workspace)
    episode = _episode(idor_bundle)
    line = idor_bundle.workspace[NOTES].decode().splitlines()[0]
    actions = [
        models.EditFile(tool="edit_file", path=f"./{NOTES}", old=line, new=line + "  # one"),
        models.EditFile(tool="edit_file", path=NOTES, old="# one", new="# two"),
        models.WriteFile(tool="write_file", path="app/extra.py", content="X = 1\n"),
        models.EditFile(tool="edit_file", path="app/extra.py", old="1", new="2"),
        models.WriteFile(tool="write_file", path="app/twice.py", content="a = 1\na = 1\n"),
        models.EditFile(tool="edit_file", path="app/twice.py", old="a = 1", new="b", line=2),
    ]
    for action in actions:  # the supervisor's own operations, then the episode's record
        if isinstance(action, models.EditFile):
            workspace.edit(action.path, action.old, action.new, action.line)
        else:
            workspace.write(action.path, action.content)
        episode.remember(action)
    assert episode.overlay == workspace.changes()
    assert set(episode.overlay) == {NOTES, "app/extra.py", "app/twice.py"}
    assert episode.overlay["app/extra.py"] == "X = 2\n"
    assert episode.overlay["app/twice.py"] == "a = 1\nb\n"  # the occurrence on line 2
    episode.remember(models.ReadFile(tool="read_file", path=NOTES))  # not a change
    assert set(episode.overlay) == {NOTES, "app/extra.py", "app/twice.py"}


def test_a_reply_builds_its_wire_payload_once() -> None:
    """The log, the gateway's reply and its metrics read one payload: one serialisation of
    the observation per step, not one per reader."""
    outcome = StepOutcome(
        models.A01Observation(output="x", phase=models.Phase.EXPLORE, steps_left=3), 0.5, True
    )
    first = outcome.wire()
    assert outcome.wire() is first
    assert first == {
        "observation": outcome.observation.model_dump(mode="json", by_alias=True),
        "reward": 0.5,
        "done": True,
    }


def test_read_file_answers_from_the_episode_exactly_as_the_sandbox_would(
    idor_bundle: Bundle, tmp_path: Path
) -> None:
    """read_file needs no round trip: the episode knows the workspace (the bundle plus the
    agent's writes), and answers with the supervisor's own checks and messages."""
    extra = {"data/blob.bin": b"\xff\xfe\x00", "data/big.txt": b"x" * 5000}
    bundle = dataclasses.replace(idor_bundle, workspace={**idor_bundle.workspace, **extra})
    workspace = Workspace(tmp_path / "ws", max_file_bytes=4096)
    workspace.load(bundle.workspace)
    episode = _episode(bundle)
    write = models.WriteFile(tool="write_file", path="app/new.py", content="N = 1\n")
    workspace.write(write.path, write.content)
    episode.remember(write)
    ctx = tools.ToolContext(
        bundle=bundle, max_write_bytes=1024, files=episode.file, max_read_bytes=4096
    )
    for path in [NOTES, f"./{NOTES}", "app/new.py", "app", "nope.py", *extra]:
        try:
            expected = ("ok", workspace.read(path))
        except WorkspaceError as exc:
            expected = (exc.code, exc.message)
        try:
            got = ("ok", tools._text(ctx, path))
        except ControlError as exc:
            got = (exc.code.value, exc.message)
        assert got == expected, path
