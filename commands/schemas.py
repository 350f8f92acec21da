"""`pylog schemas ...`: a schema registry's subjects, versions, config and mode (like `rpk registry`)."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import click

from pylog.commands.options import json_option
from pylog.commands.registry_options import make_client, registry_options
from pylog.core.errors import UsageError

_TYPES = {"avro": "AVRO", "json": "JSON", "json-schema": "JSON", "protobuf": "PROTOBUF"}
_EXT = {".avsc": "AVRO", ".avro": "AVRO", ".json": "JSON", ".proto": "PROTOBUF"}


def _client(ctx):
    return make_client(ctx.obj["url"], ctx.obj["auth"])


def _q(s: str) -> str:
    return quote(s, safe="")


def _emit(as_json: bool, obj, text: str | None = None):
    if as_json:
        click.echo(json.dumps(obj))
    else:
        click.echo(text if text is not None else (obj if isinstance(obj, str) else json.dumps(obj, indent=2)))


def _schema_body(file: str, schema_type: str | None, references) -> dict:
    try:
        text = Path(file).read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{file}: {e.strerror}") from None
    t = _TYPES[schema_type] if schema_type else _EXT.get(Path(file).suffix.lower(), "AVRO")
    body = {"schema": text}
    if t != "AVRO":
        body["schemaType"] = t
    refs = []
    for r in references:
        name, sep, rest = r.partition("=")
        subject, _, version = rest.rpartition(":")
        if not sep or not subject:
            raise UsageError(f"--reference {r!r}: expected NAME=SUBJECT:VERSION")
        refs.append({"name": name, "subject": subject, "version": int(version) if version.isdigit() else -1})
    if refs:
        body["references"] = refs
    return body


@click.group()
@registry_options
@click.pass_context
def schemas(ctx, registry_url, registry_auth):
    """Register, read and check schemas in a schema registry (Confluent's API: pylog's
    broker with --schema-registry, `pylog schema-registry start`, Confluent, Karapace).

    \b
    Examples:
      pylog schemas --schema-registry http://127.0.0.1:8081 register orders-value orders.avsc
      pylog schemas list --json
      pylog schemas check orders-value orders-v2.avsc
      pylog schemas config orders-value --set FULL
    """
    ctx.obj = {"url": registry_url, "auth": registry_auth}


@schemas.command()
@click.argument("subject")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--type", "schema_type", type=click.Choice(sorted(_TYPES), case_sensitive=False), default=None,
              help="Schema type (default: from the file's extension, .avsc avro, .json json, .proto protobuf).")
@click.option("--reference", "references", multiple=True, metavar="NAME=SUBJECT:VERSION",
              help="A schema reference (repeatable).")
@click.option("--normalize", is_flag=True, help="Ask the registry to normalise the schema.")
@json_option
@click.pass_context
def register(ctx, subject, file, schema_type, references, normalize, as_json):
    """Register FILE under SUBJECT; prints the schema id."""
    body = _schema_body(file, schema_type, references)
    c = _client(ctx)
    got = c.request("POST", f"/subjects/{_q(subject)}/versions", body, {"normalize": "true"} if normalize else None)
    v = c.request("POST", f"/subjects/{_q(subject)}", body)
    _emit(as_json, {"subject": subject, "id": got["id"], "version": v.get("version")},
          f"subject {subject} version {v.get('version')}: id {got['id']}")


@schemas.command("list")
@click.option("--deleted", is_flag=True, help="Include soft-deleted subjects.")
@click.option("--prefix", default=None, help="Only subjects starting with this.")
@json_option
@click.pass_context
def list_(ctx, deleted, prefix, as_json):
    """List subjects."""
    q = {}
    if deleted:
        q["deleted"] = "true"
    if prefix:
        q["subjectPrefix"] = prefix
    subjects = _client(ctx).request("GET", "/subjects", query=q or None)
    _emit(as_json, subjects, "\n".join(subjects) if subjects else "(no subjects)")


@schemas.command()
@click.argument("subject", required=False)
@click.option("--version", default="latest", show_default=True, help="Version number or latest.")
@click.option("--id", "schema_id", type=int, default=None, help="Get the schema with this id instead.")
@click.option("--deleted", is_flag=True, help="Also find a soft-deleted version.")
@json_option
@click.pass_context
def get(ctx, subject, version, schema_id, deleted, as_json):
    """Print a subject's version (or the schema of --id)."""
    c = _client(ctx)
    if schema_id is not None:
        obj = c.request("GET", f"/schemas/ids/{schema_id}")
    elif subject:
        obj = c.request("GET", f"/subjects/{_q(subject)}/versions/{version}",
                        query={"deleted": "true"} if deleted else None)
    else:
        raise UsageError("give a SUBJECT or --id")
    text = None
    if not as_json:
        head = " ".join(f"{k} {obj[k]}" for k in ("subject", "version", "id") if k in obj)
        text = (head + f" ({obj.get('schemaType', 'AVRO')})\n" if head else "") + _pretty(obj["schema"])
    _emit(as_json, obj, text)


def _pretty(schema: str) -> str:
    try:
        return json.dumps(json.loads(schema), indent=2)
    except ValueError:
        return schema


@schemas.command()
@click.argument("subject")
@click.option("--deleted", is_flag=True, help="Include soft-deleted versions.")
@json_option
@click.pass_context
def versions(ctx, subject, deleted, as_json):
    """List a subject's versions."""
    vs = _client(ctx).request("GET", f"/subjects/{_q(subject)}/versions",
                              query={"deleted": "true"} if deleted else None)
    _emit(as_json, vs, " ".join(str(v) for v in vs))


@schemas.command()
@click.argument("subject")
@click.option("--version", default=None, help="Delete only this version (number or latest).")
@click.option("--permanent", is_flag=True, help="Hard delete (after a soft delete), as Confluent's permanent=true.")
@json_option
@click.pass_context
def delete(ctx, subject, version, permanent, as_json):
    """Soft-delete a subject or one version (--permanent: delete for good)."""
    path = f"/subjects/{_q(subject)}" + (f"/versions/{version}" if version else "")
    got = _client(ctx).request("DELETE", path, query={"permanent": "true"} if permanent else None)
    _emit(as_json, got, f"deleted {subject} version(s) {got}")


@schemas.command()
@click.argument("subject")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--type", "schema_type", type=click.Choice(sorted(_TYPES), case_sensitive=False), default=None)
@click.option("--version", default=None, help="Check against this version only (default: as the subject's level).")
@click.option("--reference", "references", multiple=True, metavar="NAME=SUBJECT:VERSION")
@json_option
@click.pass_context
def check(ctx, subject, file, schema_type, version, references, as_json):
    """Is FILE compatible with SUBJECT? Exit 0 when it is, 1 when not (the reasons printed)."""
    body = _schema_body(file, schema_type, references)
    path = f"/compatibility/subjects/{_q(subject)}/versions" + (f"/{version}" if version else "")
    got = _client(ctx).request("POST", path, body, {"verbose": "true"})
    ok = got.get("is_compatible", False)
    text = "compatible" if ok else "incompatible:\n" + "\n".join(f"  {m}" for m in got.get("messages", []))
    _emit(as_json, got, text)
    if not ok:
        raise SystemExit(1)


def _setting(ctx, what: str, key_get: str, key_put: str, subject, value, drop, as_json):
    c = _client(ctx)
    path = f"/{what}" + (f"/{_q(subject)}" if subject else "")
    if value and drop:
        raise UsageError("use either --set or --delete")
    if value:
        got = c.request("PUT", path, {key_put: value.upper()})
    elif drop:
        if not subject:
            raise UsageError("--delete needs a SUBJECT")
        got = c.request("DELETE", path)
    else:
        got = c.request("GET", path, query={"defaultToGlobal": "true"} if subject else None)
    _emit(as_json, got, next(iter(got.values())) if isinstance(got, dict) and got else str(got))


@schemas.command()
@click.argument("subject", required=False)
@click.option("--set", "value", default=None, metavar="LEVEL",
              help="NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE.")
@click.option("--delete", "drop", is_flag=True, help="Remove the subject's own level (the global one applies).")
@json_option
@click.pass_context
def config(ctx, subject, value, drop, as_json):
    """Show or set the compatibility level (global, or SUBJECT's)."""
    _setting(ctx, "config", "compatibilityLevel", "compatibility", subject, value, drop, as_json)


@schemas.command()
@click.argument("subject", required=False)
@click.option("--set", "value", default=None, metavar="MODE", help="READWRITE, READONLY or IMPORT.")
@click.option("--delete", "drop", is_flag=True, help="Remove the subject's own mode.")
@json_option
@click.pass_context
def mode(ctx, subject, value, drop, as_json):
    """Show or set the mode (global, or SUBJECT's)."""
    _setting(ctx, "mode", "mode", "mode", subject, value, drop, as_json)
