"""The finalized feature levels (KIP-584) of this one-node cluster, changed at run time by UpdateFeatures.

pylog serves two features Kafka 4.4 finalizes: transaction.version (KIP-890: 2 lets clients add
partitions implicitly and bumps the epoch at every transaction's end) and share.version (KIP-932
share groups; 2 adds dead-letter topics, 0 turns share groups off). New clusters start at 2 and 2,
as Kafka 4.4 formats them; `--feature transaction.version=N` at start sets that level. The levels
and the finalized-features epoch (raised by every change) are kept in `features.json` of the first
log dir, so a change survives a restart as Kafka's FeatureLevelRecords do.
"""
from __future__ import annotations

from pylog.broker.common.json_state import JsonStateFile

# {feature: (min, max)} levels this broker supports (ApiVersions' supported_features)
SUPPORTED = {"share.version": (0, 2), "transaction.version": (0, 2)}
DEFAULTS = {"share.version": 2, "transaction.version": 2}
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3  # UpdateFeatures' upgrade types


class FinalizedFeatures(JsonStateFile):
    """Feature levels and their epoch, persisted."""

    FILE_NAME = "features.json"
    WHAT = "finalized features"

    def __init__(self, log_dir: str):
        super().__init__(log_dir)
        self.levels: dict[str, int] = dict(DEFAULTS)
        self.epoch = 1
        self.load()

    def _apply(self, doc: dict) -> None:
        self.levels.update({k: int(v) for k, v in doc["levels"].items() if k in SUPPORTED})
        self.epoch = int(doc["epoch"])

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    def change(self, levels: dict[str, int]) -> None:
        """Finalize `levels` (a level of 0 takes the feature out of the finalized list)."""
        if all(self.levels.get(k) == v for k, v in levels.items()):
            return
        self.levels.update(levels)
        self.epoch += len(levels)
        self._write({"epoch": self.epoch, "levels": self.levels})

    def supported(self) -> list[dict]:
        return [{"name": n, "min_version": lo, "max_version": hi} for n, (lo, hi) in SUPPORTED.items()]

    def finalized(self) -> list[dict]:
        """Kafka lists only the features finalized above 0."""
        return [{"name": n, "min_version_level": v, "max_version_level": v}
                for n, v in sorted(self.levels.items()) if v > 0]


def refusal(name: str, level: int, upgrade_type: int, current: int) -> str | None:
    """Why Kafka's FeatureControlManager refuses to move `name` from `current` to `level`, or None."""
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return "The controller does not support the given upgrade type."
    if level < 0:
        return "A feature version cannot be less than 0."
    if name not in SUPPORTED:
        return "Local controller {node} does not support this feature."
    lo, hi = SUPPORTED[name]
    if not lo <= level <= hi:
        return f"Local controller {{node}} only supports versions {lo}-{hi}"
    if level < current and upgrade_type == UPGRADE:
        return ("Can't downgrade the version of this feature without setting the upgrade type to either "
                "safe or unsafe downgrade.")
    if level > current and upgrade_type != UPGRADE:
        return "Can't downgrade to a newer version."
    return None
