"""The states of a share-partition's in-flight records and the fields of an in-flight entry, which
the share-partition (partition.py), its acquisition rules (acquisition.py) and the share views read."""
from __future__ import annotations

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
STATE_NAMES = {AVAILABLE: "Available", ACQUIRED: "Acquired", ACKNOWLEDGED: "Acknowledged", ARCHIVED: "Archived"}

# in-flight entry fields (a list each: [state, delivery count, member id, lock deadline ms])
STATE, COUNT, MEMBER, DEADLINE = 0, 1, 2, 3
