"""Typed seams of the broker, and Kafka error codes by name, checked over the product tree.

- Broker's components are attributes with a declared type, built in its
  lifecycle (open_storage, serve): no `self.x = None` with the type in a comment;
  a running broker's components are instances of their declared types.
- A handler's RequestContext carries a typed connection.
- Handlers read request fields as the schema declares them: the decoder fills
  every field (a version without one gets its schema default), so a handler or
  error builder never reads a declared field with `body.get(...)`.
- No raw Kafka error numbers: pylog.core.errors.ErrorCode names them. Outside
  core/errors.py and the protocol schema tables (core/protocol/apis), an
  integer literal other than 0 is an error: as an `error_code=`/`code=`
  keyword or dict entry, assigned to or compared with a name ending in `code`
  (or `error`), or passed where a function of the same module takes a `code`.
"""
from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import textwrap
import types
import typing
from pathlib import Path

from pylog.broker.api.context import RequestContext
from pylog.broker.api.handlers import HANDLERS
from pylog.broker.api.views import FAMILY_VIEWS, HANDLER_VIEWS
from pylog.broker.net.server import Connection
from pylog.broker.node import broker as broker_module
from pylog.testing import EmbeddedBroker
from support.product import PRODUCT
from support.source_ast import parse

ROOT = Path(__file__).resolve().parent.parent
COMPONENTS = ("recovery", "logs", "producer_ids", "group_coordinator", "txn_coordinator", "scheduler", "server",
              "security", "authorizer", "metrics", "quotas", "dir_health", "share_coordinator")


def _broker_init() -> ast.FunctionDef:
    tree = parse(Path(broker_module.__file__).read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Broker")
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")


def _declared() -> dict[str, str]:
    return {n.target.attr: ast.unparse(n.annotation) for n in ast.walk(_broker_init())
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Attribute)}


def test_broker_components_are_declared_with_their_types():
    init = _broker_init()
    untyped = [ast.unparse(t) for n in ast.walk(init) if isinstance(n, ast.Assign)
               and isinstance(n.value, ast.Constant) and n.value.value is None for t in n.targets]
    assert not untyped, f"Broker attributes that start as None without a type: {untyped}"
    declared = _declared()
    missing = [c for c in COMPONENTS if c not in declared]
    assert not missing, f"Broker components without a declared type: {missing}"
    assert all("Any" not in a for a in declared.values()), declared


def _check(value, annotation) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_check(value, a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if origin is not None:  # list[X]: the container, then each item
        return isinstance(value, origin) and all(_check(v, typing.get_args(annotation)[0]) for v in value)
    return isinstance(value, annotation)


def _annotation_namespace() -> dict:
    """The broker module's names plus those it imports only for type checking."""
    ns = dict(vars(broker_module))
    for node in parse(Path(broker_module.__file__).read_text()).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            exec(compile(ast.Module(node.body, []), "<type-checking imports>", "exec"), ns)
    return ns


def test_a_running_broker_has_its_components_of_their_declared_types(tmp_path):
    ns = _annotation_namespace()
    with EmbeddedBroker(tmp_path / "data", settings={"metrics.listener": "http://127.0.0.1:0",
                                                     "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                                     "allow.everyone.if.no.acl.found": "true"}) as eb:
        b = eb.broker
        for name, text in _declared().items():
            value = getattr(b, name)
            if name in COMPONENTS:
                assert value is not None, f"{name} was not built by the lifecycle"
            assert _check(value, eval(text, ns)), f"Broker.{name} is {type(value).__name__}, declared {text}"


def test_request_context_has_a_typed_connection():
    assert typing.get_type_hints(RequestContext)["conn"] is Connection


def _field_names(fields, out: set) -> set:
    for f in fields:
        out.add(f.name)
        sub = f.type if isinstance(f.type, list) else getattr(f.type, "fields", None)
        if sub:
            _field_names(sub, out)
    return out


def test_handlers_read_declared_request_fields_directly():
    found = []
    for h in HANDLERS:
        declared = _field_names(h.schema.request, set())
        for fn in (h.handle, h.error):
            src = textwrap.dedent(inspect.getsource(fn))
            where = f"{fn.__module__}:{fn.__name__}"  # wherever pylog is installed
            for n in ast.walk(parse(src)):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" \
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == "body" and n.args \
                        and isinstance(n.args[0], ast.Constant) and n.args[0].value in declared:
                    found.append(f"{where}: {ast.unparse(n)} ({h.schema.name} declares it)")
    assert not found, "\n".join(found)


# ---------------------------------------------------------------- narrow seams
# the group coordinator's insides: its store, its group table and its protocol halves
GROUP_INSIDES = ("store", "groups", "classic", "consumer", "migration", "txn_offsets")
GROUP_COORDINATOR_PARTS = {"broker/groups/coordinator.py", "broker/groups/classic.py", "broker/groups/migration.py",
                           "broker/groups/store.py", "broker/groups/state.py"}


def _gc_names(tree) -> set:
    """Local names bound to the group coordinator (`gc = broker.group_coordinator`)."""
    return {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign)
            and ast.unparse(n.value).endswith("group_coordinator") for t in n.targets if isinstance(t, ast.Name)}


def group_insides(path: Path, root: Path = ROOT) -> list[str]:
    """Where a module reads the group coordinator's store or tables."""
    tree = parse(path.read_text())
    names = _gc_names(tree)
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr in GROUP_INSIDES:
            owner = n.value
            if (isinstance(owner, ast.Attribute) and owner.attr == "group_coordinator") or \
                    (isinstance(owner, ast.Name) and owner.id in names):
                out.append(f"{path.relative_to(root).as_posix()}:{n.lineno}: {ast.unparse(n)}")
    return out


def test_nothing_outside_the_group_coordinator_touches_its_store_or_tables():
    found = [u for p in sorted((ROOT / "broker").rglob("*.py"))
             if p.relative_to(ROOT).as_posix() not in GROUP_COORDINATOR_PARTS for u in group_insides(p)]
    assert not found, "the group coordinator's insides used from outside (use its facade):\n" + "\n".join(found)


def test_the_group_insides_check_catches_what_it_names(tmp_path):
    p = tmp_path / "probe.py"
    p.write_text("def f(broker, self):\n    gc = broker.group_coordinator\n    a = gc.groups.get('g')\n"
                 "    b = self.broker.group_coordinator.store.append('g', [])\n    return gc.group('g'), a, b\n")
    assert [u.split(": ", 1)[1] for u in group_insides(p, tmp_path)] == [
        "gc.groups", "self.broker.group_coordinator.store"]


# the share coordinator's insides: its group, share-partition and session tables, its stores
SHARE_INSIDES = ("groups", "parts", "sessions", "store", "records", "dead_letters", "configs")


def _share_names(tree) -> set:
    """Local names bound to the share coordinator: `sc = broker.share_coordinator`, `sc, gid = ...,
    ...`, `getattr(broker, "share_coordinator", None)`; a parameter of the same name counts too."""
    def is_share(v) -> bool:
        return ast.unparse(v).endswith("share_coordinator") or (
            isinstance(v, ast.Call) and any(isinstance(a, ast.Constant) and a.value == "share_coordinator"
                                            for a in v.args))

    out = set()
    for n in ast.walk(tree):
        if not isinstance(n, ast.Assign):
            continue
        for t in n.targets:
            if isinstance(t, ast.Tuple) and isinstance(n.value, ast.Tuple):
                out |= {a.id for a, v in zip(t.elts, n.value.elts) if isinstance(a, ast.Name) and is_share(v)}
            elif isinstance(t, ast.Name) and is_share(n.value):
                out.add(t.id)
    return out


def share_insides(path: Path, root: Path = ROOT) -> list[str]:
    """Where a module reads the share coordinator's tables or stores."""
    tree = parse(path.read_text())
    names = _share_names(tree)
    return [f"{path.relative_to(root).as_posix()}:{n.lineno}: {ast.unparse(n)}" for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr in SHARE_INSIDES and (
                (isinstance(n.value, ast.Attribute) and n.value.attr == "share_coordinator")
                or (isinstance(n.value, ast.Name) and n.value.id in names))]


def test_nothing_outside_share_groups_touches_the_share_coordinators_tables():
    """Handlers and the node's views use its methods (group(), partition(), all_partitions(),
    forget(), ...); the group-wide requests go through the group coordinator's facade."""
    found = [u for p in sorted((ROOT / "broker").rglob("*.py"))
             if not p.relative_to(ROOT).as_posix().startswith("broker/groups/share/") for u in share_insides(p)]
    assert not found, "the share coordinator's insides used from outside (use its methods):\n" + "\n".join(found)


def test_the_share_insides_check_catches_what_it_names(tmp_path):
    p = tmp_path / "probe.py"
    p.write_text("def f(broker, body):\n    sc, gid = broker.share_coordinator, body['g']\n    a = sc.parts.get(gid)\n"
                 "    share = getattr(broker, 'share_coordinator', None)\n    b = share.groups\n"
                 "    return broker.share_coordinator.store, sc.group(gid), a, b\n"
                 "def g(sc):\n    return sc.sessions\n")
    assert sorted(u.split(": ", 1)[1] for u in share_insides(p, tmp_path)) == [
        "broker.share_coordinator.store", "sc.parts", "sc.sessions", "share.groups"]


def broker_holders() -> set[str]:
    """The modules (but the Broker's own) whose objects keep the Broker: `self.broker = ...`."""
    out = set()
    for p in sorted((ROOT / "broker").rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        if rel == "broker/node/broker.py":
            continue
        for n in ast.walk(parse(p.read_text())):
            if isinstance(n, (ast.Assign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                flat = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
                if any(ast.unparse(t) == "self.broker" for t in flat):
                    out.add(rel)
    return out


def test_no_handler_or_component_holds_the_broker():
    """Handlers get the node typed by their family's view (api/views.py), never the Broker class;
    components are given what they use (a PartitionLogs, the group facade, callables), not the
    Broker; the metrics listener and the console its metrics view (ops/metrics.py), the schema
    registry and the console their config and the bootstrap address."""
    for h in HANDLERS:
        first = next(iter(inspect.signature(h.handle).parameters.values()))
        assert first.annotation in (inspect.Parameter.empty, *VIEW_NAMES), (h.schema.name, first.annotation)
    assert broker_holders() == set()
    assert given_the_broker() == set()


VIEW_NAMES = {v.__name__ for v in FAMILY_VIEWS.values()}


def _members(view) -> set[str]:
    out = set()
    for cls in view.__mro__:
        if cls is object or cls.__name__ in ("Protocol", "Generic"):
            continue
        out |= set(getattr(cls, "__annotations__", {}))
        out |= {k for k, v in vars(cls).items() if callable(v) and not k.startswith("_")}
    return out


def node_reads(source: str, view: str) -> set[str]:
    """The attributes read on a parameter annotated `view` in the functions of a module."""
    out = set()
    for fn in ast.walk(parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
                  if a.annotation is not None and ast.unparse(a.annotation).strip("'\"") == view}
        out |= {n.attr for n in ast.walk(fn) if params and isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name) and n.value.id in params}
    return out


def test_each_handler_family_reads_only_what_its_view_declares():
    """The produce and fetch path gets a partition-log view, the group APIs the group facade, the
    transactional APIs the transaction facade, the share APIs the share facade (api/views.py)."""
    found = []
    for mod, view in FAMILY_VIEWS.items():
        src = (ROOT / "broker" / "api" / f"{mod}.py").read_text()
        extra = node_reads(src, view.__name__) - _members(view)
        found += [f"api/{mod}.py reads node.{a}, which {view.__name__} does not declare" for a in sorted(extra)]
    assert not found, "\n".join(found)


def test_the_view_check_catches_what_it_names():
    src = ("def f(broker: ShareView, ctx, body):\n    g = lambda: broker.group_coordinator\n"
           "    return broker.share_coordinator, ctx.conn, g\n"
           "def h(node: 'ShareView'):\n    return node.logs.topics\n")
    assert node_reads(src, "ShareView") == {"group_coordinator", "share_coordinator", "logs"}
    assert {"group_coordinator"} == node_reads(src, "ShareView") - _members(FAMILY_VIEWS["share"])


def given_the_broker(source: str | None = None) -> set[str]:
    """What the Broker calls with itself as an argument: a class it builds (`X(self, ...)`), a
    function (`make_service(self)`), one run in a thread (`loop.run_in_executor(None, f, self)`)."""
    tree = parse(source if source is not None else Path(broker_module.__file__).read_text())
    return {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)
            and any(ast.unparse(a) == "self" for a in [*n.args, *(k.value for k in n.keywords)])}


def test_the_broker_holder_checks_catch_what_they_name():
    src = ("class Broker:\n    def serve(self):\n        self.a = GroupCoordinator(self)\n"
           "        self.b = LogDirMonitor(self.partitions, lambda: self.stopping)\n        make_service(self)\n"
           "        self.loop.run_in_executor(None, make_console, self.config, node=self)\n"
           "        self.c = MetricsListener(self.metrics_view(), url)\n")
    assert given_the_broker(src) == {"GroupCoordinator", "make_service", "self.loop.run_in_executor"}
    src += ("        self.c = Monitor(self.state.is_stopping, self.halt)\n"
            "        self.d = Partial(functools.partial(self.features.level, 'x'))\n"
            "        start_console(self.config, status=lambda: self.stats)\n"
            "    def halt(self, reason):\n        pass\n")
    assert broker_callbacks(src) == {"LogDirMonitor: lambda: self.stopping", "Monitor: self.halt",
                                     "start_console: lambda: self.stats"}


def broker_callbacks(source: str | None = None) -> set[str]:
    """The Broker's own methods, and lambdas reading the Broker, that it gives to the classes it
    builds and the functions it calls by name (`X(..., self.halt)`, `X(..., lambda: self.stopping)`,
    `make_service(..., status=lambda: self.stats)`): a way back into the Broker."""
    tree = parse(source if source is not None else Path(broker_module.__file__).read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Broker")
    methods = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def back(a) -> bool:
        if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == "self":
            return a.attr in methods
        return isinstance(a, ast.Lambda) and any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(a))

    return {f"{n.func.id}: {ast.unparse(a)}" for n in ast.walk(tree) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name) for a in [*n.args, *(k.value for k in n.keywords)] if back(a)}


def test_the_broker_gives_no_component_a_way_back_to_itself():
    """Components get the node's run state (`state.is_stopping`, `state.halt`), the features, the
    log manager's refresh: never a method of the Broker or a lambda over it; nor do the services
    the Broker hosts (the schema registry, the console)."""
    assert broker_callbacks() == set()


# ---------------------------------------------------------------- nothing leads back to the Broker
# the Broker's attributes the walk does not follow: the event loop
NOT_WALKED = {"loop"}


def _refs(obj):
    """What an object refers to, as the walk follows it: its attributes (dict and slots), a bound
    method's object, a partial's function and arguments, a function's closure, a container's items;
    never a module's or a function's globals, a class, the event loop or a future."""
    if isinstance(obj, dict):
        return [*obj.keys(), *obj.values()]
    if isinstance(obj, (list, tuple, set, frozenset)) or type(obj).__name__ == "deque":
        return list(obj)
    if isinstance(obj, (types.ModuleType, type, asyncio.AbstractEventLoop, asyncio.Future, str, bytes, bytearray,
                        memoryview, int, float)):
        return []
    if isinstance(obj, types.MethodType):
        return [obj.__self__]
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if isinstance(obj, types.FunctionType):
        return [c.cell_contents for c in obj.__closure__ or () if c.cell_contents is not None] \
            if all(_filled(c) for c in obj.__closure__ or ()) else []
    out = list(getattr(obj, "__dict__", {}).values())
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if isinstance(name, str) and hasattr(obj, name) and not name.startswith("__"):
                out.append(getattr(obj, name))
    return out


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def path_to(target, roots: dict, limit: int = 500_000) -> str | None:
    """How `target` is reached from one of `roots` (name -> object), or None."""
    seen, queue = {id(target)}, [(r, name) for name, r in roots.items()]
    for obj, _ in queue:
        seen.add(id(obj))
    i = 0
    while i < len(queue) and i < limit:
        obj, where = queue[i]
        i += 1
        for ref in _refs(obj):
            if ref is target:
                return f"{where} -> the Broker"
            if id(ref) not in seen and ref is not None:
                seen.add(id(ref))
                queue.append((ref, f"{where} -> {type(ref).__name__}"))
    return None


def test_no_handler_or_component_can_reach_the_broker(tmp_path):
    """Each handler is called with its family's view (a plain object of api/views.py), and from
    no view, the dispatcher or any component (walking attributes, bound methods, partials and
    closures) is the Broker reached: the metrics listener, the schema registry and the console
    the Broker hosts included."""
    with EmbeddedBroker(tmp_path / "data", settings={"metrics.listener": "http://127.0.0.1:0",
                                                     "schema.registry.listeners": "http://127.0.0.1:0",
                                                     "console.listener": "http://127.0.0.1:0",
                                                     "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                                     "allow.everyone.if.no.acl.found": "true"}) as eb:
        b = eb.broker
        hosted = {"metrics": b.metrics, "schema_registry": b.schema_registry, "console": b.console}
        assert None not in hosted.values(), f"a hosted service did not start: {hosted}"
        routes = b.dispatcher.routes
        assert set(routes) == {h.key for h in HANDLERS}
        wrong = {h.schema.name: type(node).__name__ for h, node in routes.values()
                 if type(node) is not HANDLER_VIEWS[h.family]}
        assert not wrong, f"handlers given another object than their family's view: {wrong}"
        roots = {f"Broker.{k}": v for k, v in vars(b).items() if k not in NOT_WALKED}
        roots.update({f"the {h.schema.name} handler's view": node for h, node in routes.values()})
        assert path_to(b, roots) is None, path_to(b, roots)


def test_the_walk_finds_the_broker_behind_a_lambda_a_method_or_a_partial():
    class Node:
        def method(self):
            return self

    node = Node()
    holder = types.SimpleNamespace(slot=None)
    for way in (lambda: node, node.method, functools.partial(print, node), [{"k": (node,)}]):
        holder.slot = way
        assert path_to(node, {"holder": holder}) is not None, way
    holder.slot = functools.partial(print, "nothing")
    assert path_to(node, {"holder": holder}) is None


# ---------------------------------------------------------------- raw error numbers
def _int(n) -> int | None:
    if isinstance(n, ast.IfExp):
        return next((v for v in (_int(n.body), _int(n.orelse)) if v), None)
    if isinstance(n, ast.Constant) and type(n.value) is int:
        return n.value
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
        v = _int(n.operand)
        return None if v is None else -v
    return None


def _codeish(name: str | None) -> bool:
    return name is not None and (name in ("code", "error", "err") or name.endswith("_code"))


def _name(n) -> str | None:
    if isinstance(n, ast.Name):
        return n.id
    if isinstance(n, ast.Attribute):
        return n.attr
    if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
        return n.slice.value
    return None


def raw_codes(source: str) -> list[int]:
    """Line numbers where an integer other than 0 stands for an error code."""
    tree = parse(source)
    params = {n.name: [a.arg for a in n.args.posonlyargs + n.args.args] for n in ast.walk(tree)
              if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    lines = []

    def raw(n) -> bool:
        return bool(_int(n))

    for n in ast.walk(tree):
        if isinstance(n, ast.keyword) and _codeish(n.arg) and raw(n.value):
            lines.append(n.value.lineno)
        elif isinstance(n, ast.Dict):
            lines += [v.lineno for k, v in zip(n.keys, n.values)
                      if isinstance(k, ast.Constant) and isinstance(k.value, str) and _codeish(k.value) and raw(v)]
        elif isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            if any(_codeish(_name(s)) for s in sides) and any(raw(s) for s in sides):
                lines.append(n.lineno)
        elif isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                if isinstance(t, ast.Tuple) and isinstance(n.value, ast.Tuple):
                    if any(_codeish(_name(a)) and raw(b) for a, b in zip(t.elts, n.value.elts)):
                        lines.append(n.lineno)
                elif _codeish(_name(t)) and raw(n.value):
                    lines.append(n.lineno)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in params:
            ps = params[n.func.id]
            if any(i < len(ps) and _codeish(ps[i]) and raw(a) for i, a in enumerate(n.args)):
                lines.append(n.lineno)
    return sorted(lines)


def test_no_raw_error_numbers():
    found = []
    for top in PRODUCT:
        for p in sorted((ROOT / top).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if rel == "core/errors.py" or rel.startswith("core/protocol/apis/"):
                continue
            found += [f"{rel}:{line}" for line in raw_codes(p.read_text())]
    assert not found, "raw error numbers (use ErrorCode):\n" + "\n".join(found)


def test_the_raw_code_check_catches_what_it_names():
    src = textwrap.dedent("""
        def part(index, code, message=None):
            return {"index": index, "error_code": code}
        def f(x, e):
            a = {"error_code": 21}
            b = part(1, 19)
            code = 100 if x else 3
            global_code, msg = 21, "bad"
            if e.code == -1:
                pass
            return part(1, ErrorCode.NONE), {"error_code": 0}, dict(error_code=87)
    """)
    assert raw_codes(src) == [5, 6, 7, 8, 9, 11]
