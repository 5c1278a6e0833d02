"""Code that runs inside a sandbox: the zygote, the supervisor, the app launcher and the app.

What is here is what a sandbox's processes import, so it is what the sandbox image and the
bubblewrap view must hold; none of it imports :mod:`a01gym.sandbox.host` (an import-linter
contract checks it). The zygote is started as ``python -m a01gym.sandbox.inside.zygote`` by the
local backend, the supervisor of a pod or container as ``python -m a01gym.sandbox.inside.control``
(:mod:`a01gym.sandbox.host.container`).
"""
