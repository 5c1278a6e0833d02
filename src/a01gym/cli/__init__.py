"""Command-line interface: ``a01gym <group> <verb>``, thin wrappers over library calls."""
