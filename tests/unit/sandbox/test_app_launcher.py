"""The launcher's side of the app protocol, without forking: messages it must refuse."""

from __future__ import annotations

import json
import selectors
import socket

import pytest

from a01gym.sandbox.app_launcher import AppLauncher, LaunchedApp


def _never_fork(entrypoint: str | None) -> LaunchedApp:
    pytest.fail(f"a bad message started an app ({entrypoint!r})")


@pytest.mark.parametrize(
    "message",
    [
        b"not json",
        b"[1, 2]",
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
        for key, _ in selector.select(timeout=1):
            key.data()
        reply = json.loads(supervisor.recv(65536))
        assert reply["failed"].startswith("bad launcher message")
        assert not launcher.closed
        supervisor.close()  # the supervisor is gone: the launcher closes
        for key, _ in selector.select(timeout=1):
            key.data()
        assert launcher.closed
    finally:
        selector.close()
