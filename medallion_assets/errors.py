"""Exceptions that say how to handle them, so no caller has to be taught about each one.

- ``PermanentError``: retrying cannot clear it (a corrupt object, a name Spark rejects). Its
  class declares ``permanent = True``, optionally an ``error_code`` (default: the class name,
  ``CorruptObject`` -> ``CORRUPT_OBJECT``) and a ``fix``; the healing planner
  (``planner.healing.declared_class``) reads those, so a step that raises one fails at once,
  without retries, with its message and the fix. Any exception class may declare the same
  attributes instead of subclassing.
- ``ResourceError``: a resource of the runtime (the control store, the S3 endpoint) cannot be
  used. Its message is complete for an operator (what, where without credentials, the
  variable that sets it, the fix): the CLI prints it as one line and exits 2, no traceback.

    class CorruptObject(PermanentError):
        error_code = "CORRUPT_OBJECT"
        fix = "re-deliver the object"
"""

from __future__ import annotations


class PermanentError(Exception):
    """An error that retrying cannot clear; subclasses may set ``error_code`` and ``fix``."""

    permanent = True
    fix = ""


class ResourceError(Exception):
    """A runtime resource cannot be used; the message names it, its setting and the fix."""


class SettingsError(ResourceError):
    """An environment variable holds a value the runtime cannot use; names it and the fix."""
