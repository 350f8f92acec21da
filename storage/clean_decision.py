"""Why the log cleaner would or would not clean a partition now: `pylog compact --dry-run`.

The rules are the cleaner's own (compaction_rules.cleanable_section and should_clean, Kafka's
LogCleanerManager.grabFilthiestCompactedLog); this module only names which one decides.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from pylog.storage.compaction_rules import CleanableSection, SegmentStat, should_clean

# why codes, stable for scripts (--json "why")
NOT_COMPACTED = "not-compacted"
ONLY_ACTIVE_SEGMENT = "only-active-segment"
NOTHING_TO_CLEAN = "nothing-to-clean"
MIN_COMPACTION_LAG = "min-compaction-lag"
OPEN_TRANSACTION = "open-transaction"
MAX_COMPACTION_LAG = "max-compaction-lag"
DIRTY_RATIO = "dirty-ratio"


class CleanDecision(NamedTuple):
    """Whether the cleaner would clean the partition now, the rule that decides (`why`), and in words."""
    would_clean: bool
    why: str
    reason: str


def explain_cleaning(segments: Sequence[SegmentStat], section: CleanableSection, *, now_ms: int,
                     min_cleanable_dirty_ratio: float, min_compaction_lag_ms: int,
                     first_unstable_offset: int | None, compacted: bool = True,
                     cleanup_policy: str = "compact") -> CleanDecision:
    """The decision for one log whose segments (oldest first, the last one active) and dirty section are given."""
    if not compacted:
        return CleanDecision(False, NOT_COMPACTED, f"cleanup.policy={cleanup_policy} does not include compact")
    if len(segments) <= 1:
        return CleanDecision(False, ONLY_ACTIVE_SEGMENT, "only the active segment, which is never cleaned")
    active_base = segments[-1].base_offset
    if section.first_dirty >= active_base:
        return CleanDecision(False, NOTHING_TO_CLEAN, f"nothing to clean: every segment below the active one "
                             f"(offset {active_base}) was already cleaned")
    if section.first_uncleanable <= section.first_dirty:
        if first_unstable_offset is not None and first_unstable_offset <= section.first_dirty:
            return CleanDecision(False, OPEN_TRANSACTION, f"an open transaction starts at offset "
                                 f"{first_unstable_offset}, at or below the first dirty offset {section.first_dirty}")
        # the segment holding the first dirty offset is younger than the lag
        young = ([s for s in segments[:-1] if s.base_offset <= section.first_dirty] or segments[:1])[-1]
        age = now_ms - young.largest_timestamp
        return CleanDecision(False, MIN_COMPACTION_LAG, f"the first dirty segment (offset {young.base_offset}) has "
                             f"records {age} ms old, younger than min.compaction.lag.ms {min_compaction_lag_ms}")
    held = ""
    if section.first_uncleanable < active_base:
        cause = ("an open transaction" if first_unstable_offset is not None
                 and first_unstable_offset == section.first_uncleanable else "min.compaction.lag.ms")
        held = f"; offsets from {section.first_uncleanable} wait ({cause})"
    ratio = section.dirty_ratio
    if section.needs_compaction_now and should_clean(section, min_cleanable_dirty_ratio):
        return CleanDecision(True, MAX_COMPACTION_LAG, f"overdue: dirty records are {section.max_lag_delay_ms} ms past "
                             f"max.compaction.lag.ms (dirty ratio {ratio:.3f}){held}")
    if should_clean(section, min_cleanable_dirty_ratio):
        return CleanDecision(True, DIRTY_RATIO, f"dirty ratio {ratio:.3f} >= min.cleanable.dirty.ratio "
                             f"{min_cleanable_dirty_ratio}{held}")
    return CleanDecision(False, DIRTY_RATIO, f"dirty ratio {ratio:.3f} below min.cleanable.dirty.ratio "
                         f"{min_cleanable_dirty_ratio}{held}")
