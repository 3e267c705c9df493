"""The refs of a dev environment in a lake table: its branch ``env_<name>`` (the environment's
version of the table) and a tag per day it built (``env_<name>__day_<day>``). A table the
environment did not build has neither: the environment reads it on ``main``.

>>> env_branch("tidy"), env_day_tag("tidy", "2026-01-02")
('env_tidy', 'env_tidy__day_2026_01_02')
>>> env_of_ref("env_tidy__day_2026_01_02"), env_of_ref("env_tidy"), env_of_ref("main")
('tidy', 'tidy', None)
"""

from __future__ import annotations

import re

from medallion_assets.errors import PermanentError

ENV_PREFIX = "env_"
_DAY = "__day_"
_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
MAX_NAME = 40


class BadEnvName(PermanentError):
    """An environment's name that cannot name a branch."""

    error_code = "BAD_ENV_NAME"
    fix = "name it with lower-case letters, digits and single underscores, a letter first"


def check_env_name(name: str) -> str:
    """``name`` when it can name an environment, else ``BadEnvName`` saying why.

    >>> check_env_name("dev_anna")
    'dev_anna'
    >>> try:
    ...     check_env_name("Dev-1")
    ... except BadEnvName as error:
    ...     print(str(error)[:64])
    environment name 'Dev-1': use lower-case letters, digits and sin
    """
    if not _NAME.fullmatch(name) or len(name) > MAX_NAME:
        raise BadEnvName(
            f"environment name {name!r}: use lower-case letters, digits and single underscores, "
            f"starting with a letter (e.g. dev_anna), at most {MAX_NAME} characters"
        )
    return name


def env_branch(name: str) -> str:
    return ENV_PREFIX + name


def env_day_tag(name: str, partition: str) -> str:
    return ENV_PREFIX + name + _DAY + re.sub(r"[^0-9A-Za-z]", "_", partition)


def env_day_prefix(name: str) -> str:
    return ENV_PREFIX + name + _DAY


def is_env_branch(ref: str) -> bool:
    """Whether ``ref`` is an environment's branch (not one of its day tags, nor main's refs).

    >>> is_env_branch("env_tidy"), is_env_branch("env_tidy__day_2026_01_02")
    (True, False)
    """
    env = env_of_ref(ref)
    return env is not None and ref == env_branch(env)


def env_of_ref(ref: str) -> str | None:
    """The environment a branch or tag belongs to, or None for any other ref."""
    if not ref.startswith(ENV_PREFIX):
        return None
    name = ref.removeprefix(ENV_PREFIX).split(_DAY, 1)[0]
    return name if _NAME.fullmatch(name) else None
