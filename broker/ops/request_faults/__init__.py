"""Faults on demand: rules that make the broker misbehave on cue for any client (error codes,
delays, no answer, closed connections, throttling, offline partitions, unavailable
coordinators). One model (rules.py) behind the Python API (`EmbeddedBroker.faults`), the admin
HTTP endpoints (http.py, only with faults.enable=true) and the start-up rules file; one
engine (engine.py) consulted in request dispatch. Not to be confused with
pylog.storage.faults, which injects disk I/O errors into storage.
"""
from pylog.broker.ops.request_faults.engine import FaultEngine
from pylog.broker.ops.request_faults.rules import (
    KINDS, FaultRule, FaultRuleError, load_rules_file, rule_from_dict, rule_from_options,
)

__all__ = ["FaultEngine", "FaultRule", "FaultRuleError", "KINDS", "load_rules_file", "rule_from_dict",
           "rule_from_options"]
