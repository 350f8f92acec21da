"""What a start of the log manager found: the report and the one line for a recovery."""
from __future__ import annotations

from dataclasses import dataclass


def recovery_summary(recovered: int, cut: list[int], seconds: float) -> str:
    """The one line for a start after an unclean shutdown (each cut is logged at INFO by its log)."""
    line = f"recovered {recovered} partitions from their recovery points after an unclean shutdown in {seconds:.2f}s"
    if cut:
        line += f"; {len(cut)} cut at a torn or damaged batch ({sum(cut)} bytes dropped)"
    return line


@dataclass
class RecoveryReport:
    """What startup found: topics, partitions loaded and recovered, seconds taken, warnings."""
    topics: int
    partitions_loaded: int
    partitions_recovered: int
    seconds: float
    warnings: list[str]
