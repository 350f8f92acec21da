"""Transaction dependency cycles, as Elle finds them in the list-append model over partitions.

Operations are the vertices. ww: T1's writes to key k all come before T2's, and no other
operation's first write falls between (Kafka appends concurrent producers' records, in
transactions or not, interleaved: writes that interleave in a key order nothing). wr: T2's highest read of k is a value T1 wrote. A cycle of ww edges only is G0 (write
cycle); a cycle of ww and wr edges is G1c (circular information flow). Most vertices are pure
readers or first writers: sources and sinks are trimmed away before the strongly connected
components are searched, so a clean history of a million operations costs one pass.
"""
from __future__ import annotations

from collections import deque

from pylog.checker.log import Log, anomaly

WW, WR = "ww", "wr"


def dependency_graph(log: Log) -> dict[int, dict[int, tuple]]:
    """op -> {op: (kind, key)}; a ww edge wins over a wr edge between the same two operations."""
    graph: dict[int, dict[int, tuple]] = {}
    writer = log.writer
    for key, values in log.order.items():
        spans: dict[int, list[int]] = {}   # writer -> [first, last] index of its writes in this key
        for n, v in enumerate(values):
            w = writer.get(v)
            if w is not None:
                span = spans.get(w)
                if span is None:
                    spans[w] = [n, n]
                else:
                    span[1] = n
        ordered = sorted(spans.items(), key=lambda item: item[1][0])
        for (a, (_fa, la)), (b, (fb, _lb)) in zip(ordered, ordered[1:]):
            if la < fb:  # all of a's writes to key before all of b's; interleaved sends order nothing
                graph.setdefault(a, {})[b] = (WW, key)
    highest: dict[tuple, int] = {}
    pos = log.pos
    for i, key, pairs in log.reads:
        v = pairs[-1][1]
        k = (i, key)
        old = highest.get(k)
        if old is None or pos[v] > pos[old]:
            highest[k] = v
    for (i, key), v in highest.items():
        w = writer.get(v)
        if w is not None and w != i:
            out = graph.setdefault(w, {})
            if i not in out:
                out[i] = (WR, key)
    return graph


def _trim(graph: dict) -> dict:
    """The subgraph left after repeatedly removing vertices with no incoming or no outgoing edge."""
    indeg: dict[int, int] = {}
    for out in graph.values():
        for t in out:
            indeg[t] = indeg.get(t, 0) + 1
    preds: dict[int, list] = {}
    for s, out in graph.items():
        for t in out:
            preds.setdefault(t, []).append(s)
    outdeg = {s: len(out) for s, out in graph.items()}
    alive = set(outdeg) & set(indeg)
    queue = deque(v for v in set(outdeg) | set(indeg) if v not in alive)
    dead = set(queue)
    while queue:
        v = queue.popleft()
        alive.discard(v)
        for t in graph.get(v, ()):
            indeg[t] -= 1
            if indeg[t] == 0 and t not in dead:
                dead.add(t)
                queue.append(t)
        for s in preds.get(v, ()):
            outdeg[s] -= 1
            if outdeg[s] == 0 and s not in dead:
                dead.add(s)
                queue.append(s)
    return {s: {t: e for t, e in graph[s].items() if t in alive} for s in alive}


def _components(graph: dict) -> list[list[int]]:
    """Strongly connected components with more than one vertex (Tarjan's, without recursion)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack, on, found = [], set(), []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for t in it:
                if t not in index:
                    index[t] = low[t] = counter
                    counter += 1
                    stack.append(t)
                    on.add(t)
                    work.append((t, iter(graph[t])))
                    advanced = True
                    break
                if t in on:
                    low[v] = min(low[v], index[t])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    t = stack.pop()
                    on.discard(t)
                    comp.append(t)
                    if t == v:
                        break
                if len(comp) > 1:
                    found.append(comp)
    return found


def _shortest_cycle(graph: dict, members: set, kinds: tuple) -> list[int] | None:
    best = None
    for start in sorted(members)[:50]:
        parent = {start: None}
        queue = deque([start])
        while queue:
            v = queue.popleft()
            for t, (kind, _key) in graph[v].items():
                if t not in members or kind not in kinds:
                    continue
                if t == start:
                    path = [v]
                    while parent[path[-1]] is not None:
                        path.append(parent[path[-1]])
                    path.reverse()
                    if best is None or len(path) < len(best):
                        best = path
                    queue.clear()
                    break
                if t not in parent:
                    parent[t] = v
                    queue.append(t)
    return best


def cycles(log: Log) -> list[dict]:
    graph = _trim(dependency_graph(log))
    found = []
    for comp in _components(graph):
        members = set(comp)
        cycle = _shortest_cycle(graph, members, (WW,))
        kind = "G0"
        if cycle is None:
            cycle, kind = _shortest_cycle(graph, members, (WW, WR)), "G1c"
        steps = [(a, cycle[(n + 1) % len(cycle)]) for n, a in enumerate(cycle)]
        edges = [[a, b, *graph[a][b]] for a, b in steps]
        text = "; ".join(f"op {log.ops[a].index} -{k}({key})-> op {log.ops[b].index}" for a, b, k, key in edges)
        found.append(anomaly(kind, cycle, f"{'write cycle' if kind == 'G0' else 'circular information flow'}: "
                             + text, edges=[[log.ops[a].index, log.ops[b].index, k, key] for a, b, k, key in edges]))
    return found
