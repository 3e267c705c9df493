"""Which layers a table may read: data flows raw -> bronze -> silver -> gold.

The runtime depends on it: a bronze table's step ingests its one raw source and registers
nothing else, and silver and gold steps read published lake tables, where raw sources are not.
"""

from __future__ import annotations

from medallion_assets.catalog.base import LAYERS

LAYER_ORDER: tuple[str, ...] = ("raw", *LAYERS)


def layer_problems(table: str, reads: tuple[str, ...]) -> list[tuple[str, str]]:
    """(message, fix) for each table ``table`` reads that its layer may not read.

    Data flows raw -> bronze -> silver -> gold: a bronze table ingests exactly one raw source
    and reads nothing else; silver and gold read their own or earlier layers, never raw.

    >>> layer_problems("silver.orders", ("gold.revenue",))[0][0]
    'reads gold.revenue, a later layer than silver (raw -> bronze -> silver -> gold)'
    """
    layer = table.split(".", 1)[0]
    if layer not in LAYERS:
        return []
    problems = []
    raw = [r for r in reads if r.startswith("raw.")]
    if layer == "bronze" and len(raw) > 1:
        problems.append(
            (
                f"reads {len(raw)} raw sources ({', '.join(raw)}); a bronze table ingests one",
                "write one bronze table per source and join them in silver",
            )
        )
    elif layer == "bronze" and not raw:
        problems.append(
            (
                "reads no raw source; a bronze table ingests one registered source",
                "read raw.<source> (sources.yaml), or move the file to sql/silver/",
            )
        )
    for other in reads:
        other_layer = other.split(".", 1)[0]
        if other_layer not in LAYER_ORDER or (other_layer == "raw" and layer == "bronze"):
            continue
        if other_layer == "raw":
            problems.append(
                (
                    f"reads {other}, but only bronze tables read raw sources",
                    f"read the bronze table that ingests {other}",
                )
            )
        elif layer == "bronze":
            problems.append(
                (
                    f"reads {other}; a bronze table reads only its raw source",
                    "move the file to sql/silver/ (or a later layer)",
                )
            )
        elif LAYER_ORDER.index(other_layer) > LAYER_ORDER.index(layer):
            problems.append(
                (
                    f"reads {other}, a later layer than {layer} (raw -> bronze -> silver -> gold)",
                    f"move the file to sql/{other_layer}/, or read the tables {other} is "
                    "built from",
                )
            )
    return problems
