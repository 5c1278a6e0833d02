"""Fixtures for the operator against a real local control plane (see ``stack.py``).

Missing binaries skip these tests, or fail them when ``A01GYM_REQUIRE_K8S=1`` (CI).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

sys.path.insert(0, str(Path(__file__).parent))

from apihelpers import Api
from controlplane import ControlPlane, MissingPrerequisite
from stack import Stack

from a01gym.sandbox.host.kube_client import KubeClient
from a01gym.sandbox.host.kube_credentials import KubeCredentials

API = "/apis/a01gym.dev/v1alpha1"


def _require(reason: str) -> None:
    if os.environ.get("A01GYM_REQUIRE_K8S") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    try:
        ControlPlane(Path(tempfile.gettempdir())).check()
    except MissingPrerequisite as exc:
        _require(str(exc))
    with tempfile.TemporaryDirectory(prefix="a01gym-k8s-") as workdir:
        started = Stack(
            Path(workdir),
            operator_env={
                "A01GYM_OPERATOR__RESYNC_INTERVAL_S": "2",
                "A01GYM_OPERATOR__ORPHAN_GRACE_S": "2",
                "A01GYM_OPERATOR__POOL_WAIT_S": "1",
            },
        ).start()
        yield started
        started.stop()


@pytest_asyncio.fixture
async def kube(stack: Stack) -> AsyncIterator[KubeClient]:
    """An admin client (for assertions; the operator and gateway use their own tokens)."""
    client = KubeClient(KubeCredentials.load(stack.admin_kubeconfig))
    yield client
    await client.aclose()


@pytest_asyncio.fixture
async def api(kube: KubeClient, stack: Stack) -> Api:
    return Api(kube, stack.namespace)
