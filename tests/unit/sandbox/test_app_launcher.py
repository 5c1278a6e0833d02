"""The launcher's side of the app protocol: what a confused supervisor or a dying app must not
do to the loop it shares with every other sandbox (in the machine zygote)."""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import socket
from collections.abc import Iterator

import pytest

from a01gym.sandbox.inside import app_launcher
from a01gym.sandbox.inside.app_launcher import AppLauncher, LaunchedApp


def _never_fork(entrypoint: str | None) -> LaunchedApp:
    pytest.fail(f"a bad message started an app ({entrypoint!r})")


@dataclasses.dataclass
class _Pair:
    supervisor: socket.socket  # the supervisor's end of the socket
    launcher: AppLauncher
    selector: selectors.BaseSelector

    def turn(self) -> None:
        """One batch of events, as the loops run it."""
        app_launcher.dispatch(self.selector, 1)


@pytest.fixture
def pair() -> Iterator[_Pair]:
    supervisor, ours = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    selector = selectors.DefaultSelector()
    launcher = AppLauncher(ours, selector, _never_fork)
    yield _Pair(supervisor, launcher, selector)
    launcher.close()
    supervisor.close()
    selector.close()


@pytest.mark.parametrize(
    "message",
    [
        b"not json",
        b"[1, 2]",
        b"[" * 100_000,  # json.loads raises RecursionError
        b'{"entrypoint": 7}',
        b'{"entrypoint": ""}',
        b'{"stop": "x"}',
        json.dumps({"entrypoint": "m:" + "a" * 5000}).encode(),
    ],
)
def test_a_bad_message_is_answered_and_the_launcher_keeps_serving(
    pair: _Pair, message: bytes
) -> None:
    pair.supervisor.send(message)
    pair.turn()
    reply = json.loads(pair.supervisor.recv(65536))
    assert reply["failed"].startswith("bad launcher message")
    assert not pair.launcher.closed
    pair.supervisor.close()  # the supervisor is gone: the launcher closes
    pair.turn()
    assert pair.launcher.closed


def test_a_supervisor_that_stops_reading_is_dropped_not_waited_for(pair: _Pair) -> None:
    for _ in range(100_000):  # each bad message earns a reply nobody reads
        if pair.launcher.closed:
            break
        pair.supervisor.send(b"?")
        pair.turn()
    assert pair.launcher.closed


def test_an_app_whose_exit_and_readiness_land_together_does_not_break_the_loop(
    pair: _Pair,
) -> None:
    """The exit closes the readiness pipe; its event, already in the batch, must be a no-op."""
    ready_read, ready_write = os.pipe()
    os.close(ready_write)  # readable (end of file) from the start, like an app that died
    pid = os.posix_spawn("/bin/true", ["true"], os.environ)
    before = set(pair.selector.get_map())
    app = pair.launcher._watch(LaunchedApp(pid=pid, ns_pid=pid, ready=ready_read, go=-1))
    (pidfd,) = set(pair.selector.get_map()) - before - {ready_read}
    os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOWAIT)  # it has exited, not reaped yet
    pair.launcher._on_exit(app, pidfd)
    pair.launcher._on_ready(app)  # the stale event
    assert not pair.launcher.closed and app.ready == -1


def test_the_loop_skips_a_descriptor_unregistered_earlier_in_the_same_batch() -> None:
    selector = selectors.DefaultSelector()
    pipes = [os.pipe() for _ in range(2)]
    ran: list[int] = []

    def callback(mine: int, other: int) -> None:
        ran.append(mine)
        selector.unregister(other)

    for n, (read_end, write_end) in enumerate(pipes):
        other = pipes[1 - n][0]
        selector.register(read_end, selectors.EVENT_READ, data=lambda n=n, o=other: callback(n, o))
        os.write(write_end, b"x")
    try:
        app_launcher.serve(selector, until=lambda: bool(ran))
        assert len(ran) == 1
    finally:
        selector.close()
        for read_end, write_end in pipes:
            os.close(read_end)
            os.close(write_end)
