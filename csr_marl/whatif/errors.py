"""The one error type the what-if tools raise for things a user can fix."""

from __future__ import annotations


class StudyError(ValueError):
    """Bad study input (a ``--vary``, a ``--target``, an output folder holding another study...).

    The message is one line that names what is wrong; the CLI prints it and exits with code 2.
    """
