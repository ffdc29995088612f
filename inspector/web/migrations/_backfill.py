"""The batched backfill web's migrations 0006 and 0007 share, frozen like them.

The migration loader passes this module over (its name starts with ``_``: it holds no
migration). It imports no model code and must not change: a migration must give the
same rows whenever it runs; a later backfill that needs other steps takes its own.
"""

from collections.abc import Callable
from typing import Any


def fill_from_meta(
    rows, columns: tuple[str, ...], compute: Callable[[Any], dict[str, Any]], batch_size: int
) -> None:
    """Set ``columns`` of each row of ``rows`` (ordered by pk) to ``compute(row.meta)``,
    ``batch_size`` rows at a time."""
    after = 0
    while True:
        batch = list(rows.filter(pk__gt=after).only("pk", "meta")[:batch_size])
        if not batch:
            return
        for row in batch:
            for name, value in compute(row.meta).items():
                setattr(row, name, value)
        rows.bulk_update(batch, columns)
        after = batch[-1].pk
