"""a01gym: an OpenEnv RL environment for repairing broken access control (OWASP A01).

The package is layered (highest first): ``cli | gateway | operator | training``, then
``env | feedback``, then ``factory``, then ``sandbox``, then ``scenario``, then ``errors | config``.
A module imports only from its own layer or lower ones. See ``DESIGN.md`` for the architecture.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
