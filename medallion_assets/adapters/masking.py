"""Steps leak no secret: what an asset's body logs or raises is masked before Dagster keeps it.

Dagster serializes a failed step's exception (message and the chain it was raised from) into
the event log and prints it on the console, which compute logs capture; ``context.log`` lines
go the same ways. ``masked_step`` wraps an asset's body so both pass through
``mask_credentials`` with the secrets of the settings in force: those the run's control
resource read when the run set it up (the step requires it).
"""

import functools
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import dagster as dg

from medallion_assets.credentials import mask_credentials, masked_exception


class MaskingFilter(logging.Filter):
    """Masks each record's message (its arguments merged in) before any handler sees it."""

    def __init__(self, secrets: Iterable[str]):
        super().__init__("medallion.masking")
        self.secrets = frozenset(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_credentials(message, self.secrets)
        if masked != message:
            record.msg, record.args = masked, ()
        return True


def masked_step(
    control_key: str,
) -> Callable[[Callable[..., Iterator[Any]]], Callable[..., Iterator[Any]]]:
    """Wrap an asset body (a generator taking the context first) so its log lines and the
    exception it raises carry no secret of the settings of the resource ``control_key``.
    Dagster reads the wrapped signature."""
    return functools.partial(_masked, control_key)


def _masked(control_key: str, body: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    @functools.wraps(body)
    def step(context: dg.AssetExecutionContext, *args: Any, **kwargs: Any) -> Iterator[Any]:
        secrets = getattr(context.resources, control_key).settings.secrets
        log = context.log
        if not any(isinstance(f, MaskingFilter) for f in log.filters):
            # The step's log manager also logs the step's failure event: it is masked too.
            log.addFilter(MaskingFilter(secrets))
        try:
            yield from body(context, *args, **kwargs)
        except Exception as error:
            masked = masked_exception(error, secrets)
        else:
            return
        raise masked  # outside the except block, so the unmasked error is not its context

    return step
