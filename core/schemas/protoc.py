""".proto source to a FileDescriptorProto with protoc's Python module (grpcio-tools).

The one module of core.schemas that touches files: protoc reads .proto files from disk.

protobuf's Python runtime has no .proto parser; protoc has, and grpcio-tools ships
it as a module. The files (the schema and its references under their import
names) go to a temporary directory, protoc writes a descriptor set, and the
schema's own file comes back. Without grpcio-tools, .proto source is refused
with a message saying so (base64 descriptors still work).
"""
from __future__ import annotations

import os
import tempfile

from pylog.core.schemas.codecs import ProtobufSchema, SchemaError


def compile_text(name: str, text: str, deps: dict[str, str]):
    """The FileDescriptorProto of `text` (a .proto file called `name`), imports from `deps`."""
    try:
        from grpc_tools import protoc
    except ImportError:
        raise SchemaError("a .proto schema in source form needs protoc (pip install grpcio-tools); "
                          "base64 of a FileDescriptorProto is always accepted") from None
    import importlib.resources

    from google.protobuf import descriptor_pb2

    from pylog.core.schemas.codecs import proto_from_text_or_base64

    include = str(importlib.resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory(prefix="pylog-proto-") as d:
        for fname, ftext in [*deps.items(), (name, text)]:
            path = os.path.join(d, fname)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fdp = proto_from_text_or_base64(ftext)
            if fdp is not None:  # a reference in serialized form: protoc reads descriptor sets only as input
                ftext = _describe_only(fdp)
            with open(path, "w", encoding="utf-8") as f:
                f.write(ftext)
        out = os.path.join(d, "out.pb")
        err_path = os.path.join(d, "err.txt")
        # protoc prints its errors on fd 2: catch them for the message
        saved = os.dup(2)
        try:
            with open(err_path, "w") as ef:
                os.dup2(ef.fileno(), 2)
                rc = protoc.main(["protoc", f"-I{d}", f"-I{include}", f"--descriptor_set_out={out}", name])
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        if rc != 0:
            with open(err_path, encoding="utf-8", errors="replace") as ef:
                msg = " ".join(ef.read().replace(d + os.sep, "").split())
            raise SchemaError(f"invalid Protobuf schema: {msg or 'protoc refused it'}")
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    for f in fds.file:
        if f.name == name:
            return f
    raise SchemaError("invalid Protobuf schema: protoc produced no descriptor")


def _describe_only(fdp) -> str:
    """.proto source for a descriptor: enough for protoc to resolve the types another file imports."""
    from pylog.core.schemas.proto_print import to_proto_text

    return to_proto_text(fdp)


def install() -> None:
    """Let core's ProtobufSchema compile .proto source through protoc."""
    ProtobufSchema.compile_text = staticmethod(compile_text)
