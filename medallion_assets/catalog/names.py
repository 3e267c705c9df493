"""Names that become Dagster names: the rules Dagster applies when the code location loads,
checked here (without importing Dagster) so a project that validates also loads.

Dagster refuses the whole code location for one bad name, so each rule below mirrors one of
its checks; ``tests/adapters/test_loadable.py`` holds them against Dagster's own.
"""

from __future__ import annotations

import keyword
import re

# Op, job, check and schedule names (dagster._core.definitions.utils.VALID_NAME_REGEX).
DAGSTER_NAME = re.compile(r"^[A-Za-z0-9_]+$")
# Names Dagster refuses for a job or op even though their characters are fine.
DAGSTER_RESERVED = frozenset(
    {
        "context",
        "conf",
        "config",
        "meta",
        "arg_dict",
        "dict",
        "input_arg_dict",
        "output_arg_dict",
        "int",
        "str",
        "float",
        "bool",
        "input",
        "output",
        "type",
        *keyword.kwlist,
    }
)
# Jobs the code location defines itself (adapters/kill_switch.py, relaunch.py): a
# pipeline with one of these ids would define a second job of that name.
CODE_LOCATION_JOBS = frozenset({"medallion_control", "medallion_relaunch"})
# Tag values (a system's name is the ``system`` tag) and tag key sections.
_TAG = re.compile(r"^[A-Za-z0-9_.-]{1,63}$")
TAG_PREFIX = "tag_"  # a dataset's tag ``finance`` becomes the Dagster tag key ``tag_finance``
# dagster._core.utils.is_valid_email
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Z|a-z]{2,7}\b")


def check_owner(value: str) -> str:
    """An owner is an e-mail address or ``team:<name>``, as Dagster requires of asset owners."""
    if not (_EMAIL.fullmatch(value) or (value.startswith("team:") and len(value) > 5)):
        raise ValueError(
            f"owner {value!r} is neither an e-mail address nor a team: write "
            f"'team:{value or 'name'}' or 'someone@example.com'"
        )
    return value


def check_owners(values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        check_owner(value)
    return values


def check_dataset_tag(value: str) -> str:
    """A dataset tag becomes the key of a Dagster tag (``tag_<tag>``)."""
    if not _TAG.fullmatch(TAG_PREFIX + value):
        raise ValueError(
            f"tag {value!r} may hold only letters, digits, '_', '-' and '.', and at most "
            f"{63 - len(TAG_PREFIX)} characters (it becomes the Dagster tag "
            f"'{TAG_PREFIX}<tag>')"
        )
    return value


def check_system_name(value: str) -> str:
    """A system's name is a Dagster tag value and pool name: at most 63 characters."""
    if len(value) > 63:
        raise ValueError(
            f"system name {value[:20]!r}... has {len(value)} characters; Dagster tags hold at "
            "most 63: use a shorter name"
        )
    return value


def check_pipeline_id(value: str) -> str:
    """A pipeline's id names its Dagster job (``<id>``) and schedule (``<id>_schedule``)."""
    if value in DAGSTER_RESERVED:
        raise ValueError(
            f"pipeline id {value!r} is a name Dagster reserves for jobs: use another id, "
            f"e.g. '{value}_pipeline'"
        )
    if value in CODE_LOCATION_JOBS:
        raise ValueError(
            f"pipeline id {value!r} is the name of a job the code location defines itself: "
            f"use another id, e.g. '{value}_pipeline'"
        )
    return value


def check_name_problem(name: str) -> str | None:
    """Why Dagster would refuse ``name`` as a check or op name, or None."""
    if not DAGSTER_NAME.fullmatch(name):
        return f"{name!r} is not a valid Dagster name (letters, digits and _ only)"
    return None
