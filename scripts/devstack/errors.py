"""Why the dev stack cannot start, in words for the person who ran it."""


class DevStackError(Exception):
    """The stack cannot start. The message is for a person and never carries a secret."""


class PortInUse(DevStackError):
    """A port the stack needs cannot be bound."""
