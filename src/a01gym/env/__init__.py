"""The runtime environment: wire models, tools, reward engine, curriculum sampler, episode logs.

Sits above ``factory``/``sandbox``/``scenario`` and below the gateway, which holds one
:class:`~a01gym.env.environment.A01Environment` per session.
"""
