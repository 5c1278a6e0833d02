"""Code that runs outside the sandboxes: backends that create them, and clients that drive them.

Imported by the gateway, the operator, the environment and the factory; never by a process
inside a sandbox. A backend (``local``, ``docker``, ``kubernetes``) hands out ``backend``
handles whose ``client`` speaks the supervisor's control API (:mod:`a01gym.sandbox.protocol`);
:mod:`a01gym.grading` runs the hidden tests through that client.
"""
