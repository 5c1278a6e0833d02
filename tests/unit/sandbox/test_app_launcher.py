"""The launcher's side of the app protocol: what a confused supervisor or a dying app must not
do to the loop it shares with every other sandbox (in the machine zygote)."""

from __future__ import annotations

import json
import os
import selectors
import socket

import pytest

from a01gym.sandbox import app_launcher
from a01gym.sandbox.app_launcher import AppLauncher, LaunchedApp


def _never_fork(entrypoint: str | None) -> LaunchedApp:
    pytest.fail(f"a bad message started an app ({entrypoint!r})")


def _turn(selector: selectors.BaseSelector) -> None:
    """One batch of events, as the loops run it."""
    for key, _ in selector.select(timeout=1):
        if selector.get_map().get(key.fd) is key:
            key.data()


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
def test_a_bad_message_is_answered_and_the_launcher_keeps_serving(message: bytes) -> None:
    supervisor, ours = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    selector = selectors.DefaultSelector()
    launcher = AppLauncher(ours, selector, _never_fork)
    try:
        supervisor.send(message)
        _turn(selector)
        reply = json.loads(supervisor.recv(65536))
        assert reply["failed"].startswith("bad launcher message")
        assert not launcher.closed
        supervisor.close()  # the supervisor is gone: the launcher closes
        _turn(selector)
        assert launcher.closed
    finally:
        launcher.close()
        supervisor.close()
        selector.close()


def test_a_supervisor_that_stops_reading_is_dropped_not_waited_for() -> None:
    supervisor, ours = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    selector = selectors.DefaultSelector()
    launcher = AppLauncher(ours, selector, _never_fork)
    try:
        for _ in range(100_000):  # each bad message earns a reply nobody reads
            if launcher.closed:
                break
            supervisor.send(b"?")
            _turn(selector)
        assert launcher.closed
    finally:
        launcher.close()
        supervisor.close()
        selector.close()


def test_an_app_whose_exit_and_readiness_land_together_does_not_break_the_loop() -> None:
    """The exit closes the readiness pipe; its event, already in the batch, must be a no-op."""
    supervisor, ours = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    selector = selectors.DefaultSelector()
    launcher = AppLauncher(ours, selector, _never_fork)
    ready_read, ready_write = os.pipe()
    os.close(ready_write)  # readable (end of file) from the start, like an app that died
    pid = os.posix_spawn("/bin/true", ["true"], os.environ)
    app = launcher._watch(LaunchedApp(pid=pid, ns_pid=pid, ready=ready_read, go=-1))
    try:
        pidfd = next(
            k.fd for k in selector.get_map().values() if k.fd not in (ours.fileno(), ready_read)
        )
        selectors.DefaultSelector().close()
        os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOWAIT)  # it has exited, not reaped yet
        launcher._on_exit(app, pidfd)
        launcher._on_ready(app)  # the stale event
        assert not launcher.closed and app.ready == -1
    finally:
        launcher.close()
        supervisor.close()
        selector.close()


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
