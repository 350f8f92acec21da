"""Confluent's REST errors: an HTTP status and an `error_code` in the JSON body."""
from __future__ import annotations

SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_SOFT_DELETED = 40404
SUBJECT_NOT_SOFT_DELETED = 40405
SCHEMA_VERSION_SOFT_DELETED = 40406
SCHEMA_VERSION_NOT_SOFT_DELETED = 40407
SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED = 40408
SUBJECT_LEVEL_MODE_NOT_CONFIGURED = 40409
INCOMPATIBLE_SCHEMA = 409
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY_LEVEL = 42203
INVALID_MODE = 42204
OPERATION_NOT_PERMITTED = 42205
REFERENCE_EXISTS = 42206
ID_DOES_NOT_MATCH = 42207
INVALID_SUBJECT = 42208
INVALID_PAGINATION = 42209
STORE_ERROR = 50001
OPERATION_TIMEOUT = 50002
UNAUTHORIZED = 401


class RestError(Exception):
    """An error answer: `status` for HTTP, `code` for the body's error_code."""

    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict:
        return {"error_code": self.code, "message": self.message}


def subject_not_found(subject: str) -> RestError:
    return RestError(404, SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")


def version_not_found(subject: str, version) -> RestError:
    return RestError(404, VERSION_NOT_FOUND, f"Version {version} not found.")


def schema_not_found(what: str = "Schema not found") -> RestError:
    return RestError(404, SCHEMA_NOT_FOUND, what)


def invalid_schema(reason: str) -> RestError:
    return RestError(422, INVALID_SCHEMA, f"Invalid schema: {reason}")


def invalid_version(version) -> RestError:
    return RestError(422, INVALID_VERSION,
                     f"The specified version '{version}' is not a valid version id. Allowed values are "
                     f"between [1, 2^31-1] and the string \"latest\"")


def read_only(subject: str | None) -> RestError:
    what = f"Subject {subject}" if subject else "The registry"
    return RestError(422, OPERATION_NOT_PERMITTED, f"{what} is in read-only mode")
