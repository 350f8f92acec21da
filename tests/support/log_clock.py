"""The log tests' clock and config helpers."""
from pylog.core.config import BROKER_CONFIGS, TOPIC_CONFIGS


NOW = 1_700_000_000_000


class Clock:
    def __init__(self, ms=NOW):
        self.ms = ms

    def __call__(self):
        return self.ms / 1000


def cfg(**kw):
    return TOPIC_CONFIGS.resolve({k.replace("_", "."): str(v) for k, v in kw.items()})


def broker(**kw):
    return BROKER_CONFIGS.resolve({k.replace("_", "."): str(v) for k, v in kw.items()})
