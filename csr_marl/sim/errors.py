"""The core's own exceptions (a module of its own: the compiled core cannot define subclasses of
Python's built-in exceptions, see tools/csr_marl_build.py)."""


class ConservationError(AssertionError):
    """Tickets were created or lost: arrived != resolved + abandoned + closed_unresolved + in_system."""
