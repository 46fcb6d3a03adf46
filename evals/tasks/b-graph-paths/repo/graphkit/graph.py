"""Directed and undirected weighted graphs, and the classic algorithms on them.

Nodes are any hashable values; each edge has a numeric ``weight`` (default 1) and optional attributes.
Algorithms are plain functions taking a `Graph`, grouped below by family:

* traversal: `bfs`, `dfs`, `bfs_layers`, `nodes_within`, `topological_sort`, `find_cycle`;
* structure: `connected_components`, `strongly_connected_components`, `is_bipartite`,
  `transitive_closure`, `condensation`;
* shortest paths: `dijkstra`, `shortest_path`, `astar`, `bellman_ford`, `floyd_warshall`,
  `k_shortest_paths`, `dag_longest_path`, `eccentricity`, `diameter`;
* spanning trees: `kruskal`, `prim`;
* flows and cuts: `max_flow`, `min_cut`.

Functions raise `NodeNotFound` for unknown nodes, `NoPath` when a target cannot be reached and
`NegativeCycle` when a negative cycle makes shortest paths undefined.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

Node = Hashable
INF = math.inf


class GraphError(Exception):
    """Base class for graph errors."""


class NodeNotFound(GraphError, KeyError):
    def __str__(self) -> str:
        return f"node {self.args[0]!r} is not in the graph"


class NoPath(GraphError):
    pass


class NegativeCycle(GraphError):
    def __init__(self, cycle: list[Node]) -> None:
        super().__init__(f"negative cycle through {cycle}")
        self.cycle = cycle


class NotADAG(GraphError):
    def __init__(self, cycle: list[Node]) -> None:
        super().__init__(f"graph has a cycle: {' -> '.join(map(repr, cycle))}")
        self.cycle = cycle


# --- the graph -----------------------------------------------------------------------------------


class Graph:
    """An adjacency-map graph. Undirected graphs store every edge in both directions.

    >>> g = Graph.from_edges([("a", "b", 2), ("b", "c", 1)])
    >>> g.weight("a", "b")
    2
    """

    def __init__(self, directed: bool = False) -> None:
        self.directed = directed
        self._nodes: dict[Node, dict[str, Any]] = {}
        self._succ: dict[Node, dict[Node, dict[str, Any]]] = {}
        self._pred: dict[Node, dict[Node, dict[str, Any]]] = {}

    @classmethod
    def from_edges(cls, edges: Iterable[tuple], directed: bool = False) -> Graph:
        """Edges as (u, v) or (u, v, weight) tuples."""
        graph = cls(directed)
        for edge in edges:
            if len(edge) == 2:
                graph.add_edge(edge[0], edge[1])
            elif len(edge) == 3:
                graph.add_edge(edge[0], edge[1], weight=edge[2])
            else:
                raise GraphError(f"an edge is (u, v) or (u, v, weight), got {edge!r}")
        return graph

    # nodes

    def add_node(self, node: Node, **attrs: Any) -> None:
        if node not in self._nodes:
            self._nodes[node] = {}
            self._succ[node] = {}
            self._pred[node] = {}
        self._nodes[node].update(attrs)

    def remove_node(self, node: Node) -> None:
        self._check(node)
        for other in list(self._succ[node]):
            del self._pred[other][node]
        for other in list(self._pred[node]):
            del self._succ[other][node]
        del self._nodes[node], self._succ[node], self._pred[node]

    def has_node(self, node: Node) -> bool:
        return node in self._nodes

    def node_attrs(self, node: Node) -> dict[str, Any]:
        self._check(node)
        return self._nodes[node]

    @property
    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node: object) -> bool:
        return node in self._nodes

    def __iter__(self) -> Iterator[Node]:
        return iter(self._nodes)

    def _check(self, *nodes: Node) -> None:
        for node in nodes:
            if node not in self._nodes:
                raise NodeNotFound(node)

    # edges

    def add_edge(self, u: Node, v: Node, weight: float = 1, **attrs: Any) -> None:
        """Add or update an edge. NaN weights are refused (they break every comparison)."""
        if isinstance(weight, float) and math.isnan(weight):
            raise GraphError(f"edge {u!r}-{v!r} has a NaN weight")
        self.add_node(u)
        self.add_node(v)
        data = self._succ[u].get(v, {})
        data.update(attrs, weight=weight)
        self._succ[u][v] = data
        self._pred[v][u] = data
        if not self.directed:
            self._succ[v][u] = data
            self._pred[u][v] = data

    def remove_edge(self, u: Node, v: Node) -> None:
        if not self.has_edge(u, v):
            raise GraphError(f"no edge {u!r} -> {v!r}")
        del self._succ[u][v], self._pred[v][u]
        if not self.directed and u != v:
            del self._succ[v][u], self._pred[u][v]

    def has_edge(self, u: Node, v: Node) -> bool:
        return u in self._succ and v in self._succ[u]

    def weight(self, u: Node, v: Node) -> float:
        if not self.has_edge(u, v):
            raise GraphError(f"no edge {u!r} -> {v!r}")
        return self._succ[u][v]["weight"]

    def edge_attrs(self, u: Node, v: Node) -> dict[str, Any]:
        if not self.has_edge(u, v):
            raise GraphError(f"no edge {u!r} -> {v!r}")
        return self._succ[u][v]

    def edges(self) -> list[tuple[Node, Node, float]]:
        """Every edge once as (u, v, weight); undirected edges in the order they were first seen."""
        out = []
        seen: set[frozenset] = set()
        for u, targets in self._succ.items():
            for v, data in targets.items():
                if not self.directed:
                    key = frozenset((u, v))
                    if key in seen:
                        continue
                    seen.add(key)
                out.append((u, v, data["weight"]))
        return out

    def number_of_edges(self) -> int:
        return len(self.edges())

    def successors(self, node: Node) -> list[Node]:
        self._check(node)
        return list(self._succ[node])

    neighbors = successors

    def predecessors(self, node: Node) -> list[Node]:
        self._check(node)
        return list(self._pred[node])

    def out_edges(self, node: Node) -> Iterator[tuple[Node, float]]:
        self._check(node)
        for v, data in self._succ[node].items():
            yield v, data["weight"]

    def degree(self, node: Node) -> int:
        """Number of incident edges; a self-loop counts twice, as usual."""
        self._check(node)
        if self.directed:
            return len(self._succ[node]) + len(self._pred[node])
        return len(self._succ[node]) + (1 if node in self._succ[node] else 0)

    def in_degree(self, node: Node) -> int:
        self._check(node)
        return len(self._pred[node])

    def out_degree(self, node: Node) -> int:
        self._check(node)
        return len(self._succ[node])

    # derived graphs

    def copy(self) -> Graph:
        graph = Graph(self.directed)
        for node, attrs in self._nodes.items():
            graph.add_node(node, **attrs)
        for u, v, _ in self.edges():
            graph.add_edge(u, v, **dict(self._succ[u][v]))
        return graph

    def reverse(self) -> Graph:
        """The graph with every directed edge flipped (a copy for undirected graphs)."""
        if not self.directed:
            return self.copy()
        graph = Graph(directed=True)
        for node, attrs in self._nodes.items():
            graph.add_node(node, **attrs)
        for u, v, _ in self.edges():
            graph.add_edge(v, u, **dict(self._succ[u][v]))
        return graph

    def subgraph(self, nodes: Iterable[Node]) -> Graph:
        keep = set(nodes)
        self._check(*keep)
        graph = Graph(self.directed)
        for node in self._nodes:
            if node in keep:
                graph.add_node(node, **self._nodes[node])
        for u, v, _ in self.edges():
            if u in keep and v in keep:
                graph.add_edge(u, v, **dict(self._succ[u][v]))
        return graph

    def to_undirected(self) -> Graph:
        """Forget directions; of two opposite edges the lighter weight is kept."""
        graph = Graph(directed=False)
        for node, attrs in self._nodes.items():
            graph.add_node(node, **attrs)
        for u, v, w in self.edges():
            if not graph.has_edge(u, v) or w < graph.weight(u, v):
                graph.add_edge(u, v, weight=w)
        return graph

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: {"directed", "nodes": {node: attrs}, "edges": [[u, v, attrs]]}."""
        return {
            "directed": self.directed,
            "nodes": {str(node): dict(attrs) for node, attrs in self._nodes.items()},
            "edges": [[str(u), str(v), dict(self._succ[u][v])] for u, v, _ in self.edges()],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Graph:
        graph = cls(bool(data.get("directed", False)))
        for node, attrs in data.get("nodes", {}).items():
            graph.add_node(node, **attrs)
        for u, v, attrs in data.get("edges", []):
            graph.add_edge(u, v, **attrs)
        return graph

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return f"<Graph {kind}, {len(self)} nodes, {self.number_of_edges()} edges>"


@dataclass(frozen=True)
class Path:
    """A path and its total weight."""

    nodes: list[Node]
    weight: float

    @property
    def hops(self) -> int:
        return len(self.nodes) - 1

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)


def path_weight(graph: Graph, nodes: list[Node]) -> float:
    """Total weight along `nodes`; raises GraphError when two consecutive nodes are not joined."""
    return sum(graph.weight(u, v) for u, v in zip(nodes, nodes[1:]))


# --- traversal -----------------------------------------------------------------------------------


def bfs(graph: Graph, source: Node) -> list[Node]:
    """Nodes reachable from `source` in breadth-first order."""
    return [node for layer in bfs_layers(graph, source) for node in layer]


def bfs_layers(graph: Graph, source: Node, max_depth: int | None = None) -> Iterator[list[Node]]:
    """Layers of nodes by hop distance from `source`: [source], its neighbours, their neighbours, ..."""
    graph._check(source)
    seen = {source}
    layer = [source]
    depth = 0
    while layer and (max_depth is None or depth <= max_depth):
        yield layer
        following = []
        for node in layer:
            for neighbour in graph.successors(node):
                if neighbour not in seen:
                    seen.add(neighbour)
                    following.append(neighbour)
        layer = following
        depth += 1


def nodes_within(graph: Graph, source: Node, hops: int) -> set[Node]:
    """Every node at most `hops` edges away from `source` (including `source`)."""
    return {node for layer in bfs_layers(graph, source, max_depth=hops) for node in layer}


def dfs(graph: Graph, source: Node) -> list[Node]:
    """Nodes reachable from `source` in depth-first preorder (neighbours in insertion order)."""
    graph._check(source)
    order = []
    seen = set()
    stack = [source]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        stack.extend(reversed([n for n in graph.successors(node) if n not in seen]))
    return order


def dfs_postorder(graph: Graph, sources: Iterable[Node] | None = None) -> list[Node]:
    """Nodes in depth-first postorder (iterative, so deep graphs do not hit the recursion limit)."""
    seen: set[Node] = set()
    order: list[Node] = []
    for root in graph.nodes if sources is None else sources:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(graph.successors(root)))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(graph.successors(child))))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def topological_sort(graph: Graph) -> list[Node]:
    """Kahn's algorithm; ties keep insertion order. Raises NotADAG with a cycle when there is one."""
    if not graph.directed:
        raise GraphError("topological sort needs a directed graph")
    indegree = {node: graph.in_degree(node) for node in graph}
    ready = deque(node for node, d in indegree.items() if d == 0)
    order = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for succ in graph.successors(node):
            indegree[succ] -= 1
            if indegree[succ] == 0:
                ready.append(succ)
    if len(order) != len(graph):
        raise NotADAG(find_cycle(graph) or [])
    return order


def find_cycle(graph: Graph) -> list[Node] | None:
    """One cycle as [a, b, ..., a], or None. Undirected graphs ignore the edge just walked."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph.nodes, WHITE)
    parent: dict[Node, Node | None] = {}
    for root in graph.nodes:
        if colour[root] != WHITE:
            continue
        parent[root] = None
        stack = [(root, iter(graph.successors(root)))]
        colour[root] = GREY
        while stack:
            node, children = stack[-1]
            advanced = False
            for child in children:
                if not graph.directed and child == parent[node]:
                    continue
                if colour[child] == GREY:
                    cycle = [child]
                    walk = node
                    while walk != child:
                        cycle.append(walk)
                        walk = parent[walk]
                    cycle.append(child)
                    return cycle[::-1]
                if colour[child] == WHITE:
                    colour[child] = GREY
                    parent[child] = node
                    stack.append((child, iter(graph.successors(child))))
                    advanced = True
                    break
            if not advanced:
                colour[node] = BLACK
                stack.pop()
    return None


def has_path(graph: Graph, source: Node, target: Node) -> bool:
    graph._check(target)
    return target in set(bfs(graph, source))


def bfs_path(graph: Graph, source: Node, target: Node) -> list[Node]:
    """A path with the fewest edges (weights ignored)."""
    graph._check(source, target)
    parent: dict[Node, Node | None] = {source: None}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        if node == target:
            return _walk_back(parent, target)
        for neighbour in graph.successors(node):
            if neighbour not in parent:
                parent[neighbour] = node
                queue.append(neighbour)
    raise NoPath(f"{target!r} is not reachable from {source!r}")


def all_simple_paths(graph: Graph, source: Node, target: Node, cutoff: int | None = None) -> Iterator[list[Node]]:
    """Every path from `source` to `target` that repeats no node, with at most `cutoff` edges."""
    graph._check(source, target)
    limit = len(graph) - 1 if cutoff is None else cutoff
    if limit < 1:
        return
    path = [source]
    on_path = {source}
    stack = [iter(graph.successors(source))]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            on_path.discard(path.pop())
        elif child in on_path:
            continue
        elif child == target:
            yield path + [child]
        elif len(path) < limit:
            path.append(child)
            on_path.add(child)
            stack.append(iter(graph.successors(child)))


# --- structure -----------------------------------------------------------------------------------


def connected_components(graph: Graph) -> list[set[Node]]:
    """Components of an undirected graph (weakly connected components of a directed one)."""
    undirected = graph.to_undirected() if graph.directed else graph
    seen: set[Node] = set()
    components = []
    for node in undirected:
        if node not in seen:
            component = set(bfs(undirected, node))
            seen |= component
            components.append(component)
    return components


def is_connected(graph: Graph) -> bool:
    return len(graph) > 0 and len(connected_components(graph)) == 1


def strongly_connected_components(graph: Graph) -> list[set[Node]]:
    """Tarjan's algorithm, iterative. Components come out in reverse topological order."""
    index_of: dict[Node, int] = {}
    lowlink: dict[Node, int] = {}
    on_stack: set[Node] = set()
    stack: list[Node] = []
    components: list[set[Node]] = []
    counter = itertools.count()
    for root in graph.nodes:
        if root in index_of:
            continue
        work = [(root, iter(graph.successors(root)))]
        index_of[root] = lowlink[root] = next(counter)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            descended = False
            for child in children:
                if child not in index_of:
                    index_of[child] = lowlink[child] = next(counter)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.successors(child))))
                    descended = True
                    break
                if child in on_stack:
                    lowlink[node] = min(lowlink[node], index_of[child])
            if descended:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
            if lowlink[node] == index_of[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def condensation(graph: Graph) -> tuple[Graph, dict[Node, int]]:
    """The DAG of strongly connected components, and which component each node belongs to."""
    components = strongly_connected_components(graph)
    member_of = {node: i for i, component in enumerate(components) for node in component}
    dag = Graph(directed=True)
    for i in range(len(components)):
        dag.add_node(i, members=components[i])
    for u, v, _ in graph.edges():
        if member_of[u] != member_of[v]:
            dag.add_edge(member_of[u], member_of[v])
    return dag, member_of


def is_bipartite(graph: Graph) -> tuple[bool, dict[Node, int]]:
    """Two-colour the graph by BFS; returns (False, partial colouring) at the first odd cycle."""
    undirected = graph.to_undirected() if graph.directed else graph
    colour: dict[Node, int] = {}
    for root in undirected:
        if root in colour:
            continue
        colour[root] = 0
        queue = deque([root])
        while queue:
            node = queue.popleft()
            for neighbour in undirected.successors(node):
                if neighbour not in colour:
                    colour[neighbour] = 1 - colour[node]
                    queue.append(neighbour)
                elif colour[neighbour] == colour[node]:
                    return False, colour
    return True, colour


def transitive_closure(graph: Graph) -> Graph:
    """A directed graph with an edge u -> v whenever v is reachable from u by a non-empty path."""
    closure = Graph(directed=True)
    for node in graph:
        closure.add_node(node)
    for node in graph:
        for reached in bfs(graph, node)[1:]:
            closure.add_edge(node, reached)
        if any(node in graph.successors(s) for s in bfs(graph, node)):
            closure.add_edge(node, node)
    return closure


def descendants(graph: Graph, node: Node) -> set[Node]:
    """Nodes reachable from `node`, excluding itself."""
    return set(bfs(graph, node)) - {node}


def ancestors(graph: Graph, node: Node) -> set[Node]:
    """Nodes from which `node` is reachable, excluding itself."""
    return set(bfs(graph.reverse(), node)) - {node} if graph.directed else descendants(graph, node)


def transitive_reduction(graph: Graph) -> Graph:
    """The smallest DAG with the same reachability: drops u -> v when v is reachable another way."""
    topological_sort(graph)  # raises NotADAG for cyclic graphs
    reduced = Graph(directed=True)
    for node in graph:
        reduced.add_node(node, **graph.node_attrs(node))
    for u in graph:
        direct = set(graph.successors(u))
        indirect: set[Node] = set()
        for v in direct:
            indirect |= descendants(graph, v)
        for v in graph.successors(u):
            if v not in indirect:
                reduced.add_edge(u, v, **dict(graph.edge_attrs(u, v)))
    return reduced


def density(graph: Graph) -> float:
    """Edges present / edges possible (self-loops not counted as possible)."""
    n = len(graph)
    if n < 2:
        return 0.0
    possible = n * (n - 1) if graph.directed else n * (n - 1) / 2
    return graph.number_of_edges() / possible


def is_forest(graph: Graph) -> bool:
    return not graph.directed and find_cycle(graph) is None


def is_tree(graph: Graph) -> bool:
    return is_forest(graph) and is_connected(graph)


def complement(graph: Graph) -> Graph:
    """Same nodes; an edge exactly where `graph` has none (no self-loops)."""
    result = Graph(graph.directed)
    for node in graph:
        result.add_node(node)
    nodes = graph.nodes
    for i, u in enumerate(nodes):
        for v in nodes if graph.directed else nodes[i + 1:]:
            if u != v and not graph.has_edge(u, v):
                result.add_edge(u, v)
    return result


# --- shortest paths ------------------------------------------------------------------------------


def _check_non_negative(graph: Graph) -> None:
    for u, v, w in graph.edges():
        if w < 0:
            raise GraphError(f"edge {u!r} -> {v!r} has negative weight {w}; use bellman_ford")


def _walk_back(predecessor: dict[Node, Node | None], target: Node) -> list[Node]:
    nodes = [target]
    while predecessor[nodes[-1]] is not None:
        nodes.append(predecessor[nodes[-1]])
    return nodes[::-1]


def dijkstra(graph: Graph, source: Node, target: Node | None = None,
             ignore_nodes: set[Node] | None = None,
             ignore_edges: set[tuple[Node, Node]] | None = None) -> tuple[dict[Node, float], dict[Node, Node | None]]:
    """Distances and predecessors from `source`; stops early once `target` is settled.

    `ignore_nodes` / `ignore_edges` hide parts of the graph (used by `k_shortest_paths`).
    """
    graph._check(source)
    _check_non_negative(graph)
    ignore_nodes = ignore_nodes or set()
    ignore_edges = ignore_edges or set()
    dist: dict[Node, float] = {source: 0}
    pred: dict[Node, Node | None] = {source: None}
    done: set[Node] = set()
    tie = itertools.count()  # nodes need not be comparable
    heap = [(0.0, next(tie), source)]
    while heap:
        d, _, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        if node == target:
            break
        for neighbour, weight in graph.out_edges(node):
            if neighbour in ignore_nodes or (node, neighbour) in ignore_edges:
                continue
            candidate = d + weight
            if candidate < dist.get(neighbour, INF):
                dist[neighbour] = candidate
                pred[neighbour] = node
                heapq.heappush(heap, (candidate, next(tie), neighbour))
    return {n: dist[n] for n in done}, {n: pred[n] for n in done}


def shortest_path(graph: Graph, source: Node, target: Node) -> Path:
    """The lightest path from `source` to `target` (Dijkstra; weights must not be negative)."""
    graph._check(target)
    dist, pred = dijkstra(graph, source, target)
    if target not in dist:
        raise NoPath(f"{target!r} is not reachable from {source!r}")
    return Path(_walk_back(pred, target), dist[target])


def shortest_path_lengths(graph: Graph, source: Node) -> dict[Node, float]:
    return dijkstra(graph, source)[0]


def astar(graph: Graph, source: Node, target: Node, heuristic: Callable[[Node, Node], float]) -> Path:
    """A* search. `heuristic(node, target)` must never overestimate the remaining distance."""
    graph._check(source, target)
    _check_non_negative(graph)
    tie = itertools.count()
    g_score: dict[Node, float] = {source: 0}
    pred: dict[Node, Node | None] = {source: None}
    closed: set[Node] = set()
    heap = [(heuristic(source, target), next(tie), source)]
    while heap:
        _, _, node = heapq.heappop(heap)
        if node == target:
            return Path(_walk_back(pred, target), g_score[target])
        if node in closed:
            continue
        closed.add(node)
        for neighbour, weight in graph.out_edges(node):
            candidate = g_score[node] + weight
            if candidate < g_score.get(neighbour, INF):
                g_score[neighbour] = candidate
                pred[neighbour] = node
                heapq.heappush(heap, (candidate + heuristic(neighbour, target), next(tie), neighbour))
    raise NoPath(f"{target!r} is not reachable from {source!r}")


def bellman_ford(graph: Graph, source: Node) -> tuple[dict[Node, float], dict[Node, Node | None]]:
    """Shortest distances with negative weights allowed; raises NegativeCycle if one is reachable."""
    graph._check(source)
    if not graph.directed and any(w < 0 for _, _, w in graph.edges()):
        raise GraphError("a negative undirected edge is a negative cycle by itself")
    dist: dict[Node, float] = {source: 0}
    pred: dict[Node, Node | None] = {source: None}
    edges = [(u, v, data["weight"]) for u in graph for v, data in graph._succ[u].items()]
    for _ in range(len(graph) - 1):
        changed = False
        for u, v, w in edges:
            if u in dist and dist[u] + w < dist.get(v, INF):
                dist[v] = dist[u] + w
                pred[v] = u
                changed = True
        if not changed:
            return dist, pred
    for u, v, w in edges:
        if u in dist and dist[u] + w < dist.get(v, INF):
            # Walk back len(graph) steps to be sure we are inside the cycle, then collect it.
            pred[v] = u
            node = v
            for _ in range(len(graph)):
                node = pred[node]
            cycle = [node]
            walk = pred[node]
            while walk != node:
                cycle.append(walk)
                walk = pred[walk]
            cycle.append(node)
            raise NegativeCycle(cycle[::-1])
    return dist, pred


def floyd_warshall(graph: Graph) -> dict[Node, dict[Node, float]]:
    """All-pairs shortest distances (unreachable pairs are inf); raises NegativeCycle."""
    nodes = graph.nodes
    dist = {u: {v: (0 if u == v else INF) for v in nodes} for u in nodes}
    for u, v, w in graph.edges():
        dist[u][v] = min(dist[u][v], w)
        if not graph.directed:
            dist[v][u] = min(dist[v][u], w)
    for k in nodes:
        dk = dist[k]
        for i in nodes:
            dik = dist[i][k]
            if dik == INF:
                continue
            di = dist[i]
            for j in nodes:
                if dik + dk[j] < di[j]:
                    di[j] = dik + dk[j]
    for node in nodes:
        if dist[node][node] < 0:
            raise NegativeCycle([node])
    return dist


def k_shortest_paths(graph: Graph, source: Node, target: Node, k: int) -> list[Path]:
    """Up to `k` loopless paths from `source` to `target`, lightest first (Yen's algorithm)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    try:
        found = [shortest_path(graph, source, target)]
    except NoPath:
        return []
    candidates: list[tuple[float, int, list[Node]]] = []
    seen = {tuple(found[0].nodes)}
    tie = itertools.count()
    while len(found) < k:
        previous = found[-1].nodes
        for i in range(len(previous) - 1):
            spur = previous[i]
            root = previous[: i + 1]
            blocked_edges = {
                (p.nodes[i], p.nodes[i + 1]) for p in found if len(p.nodes) > i + 1 and p.nodes[: i + 1] == root
            }
            if not graph.directed:
                blocked_edges |= {(v, u) for u, v in blocked_edges}
            dist, pred = dijkstra(graph, spur, target, ignore_nodes=set(root[:-1]), ignore_edges=blocked_edges)
            if target not in dist:
                continue
            nodes = root[:-1] + _walk_back(pred, target)
            if tuple(nodes) not in seen:
                seen.add(tuple(nodes))
                heapq.heappush(candidates, (path_weight(graph, nodes), next(tie), nodes))
        if not candidates:
            break
        weight, _, nodes = heapq.heappop(candidates)
        found.append(Path(nodes, weight))
    return found


def dag_longest_path(graph: Graph) -> Path:
    """The heaviest path in a DAG (the critical path of a task network)."""
    order = topological_sort(graph)
    if not order:
        return Path([], 0)
    best: dict[Node, float] = dict.fromkeys(order, 0.0)
    pred: dict[Node, Node | None] = dict.fromkeys(order, None)
    for node in order:
        for succ, weight in graph.out_edges(node):
            if best[node] + weight > best[succ]:
                best[succ] = best[node] + weight
                pred[succ] = node
    end = max(order, key=lambda n: best[n])
    return Path(_walk_back(pred, end), best[end])


def eccentricity(graph: Graph, node: Node) -> float:
    """The greatest shortest-path distance from `node`; inf if some node is unreachable."""
    dist = shortest_path_lengths(graph, node)
    return max(dist.values()) if len(dist) == len(graph) else INF


def diameter(graph: Graph) -> float:
    if not len(graph):
        raise GraphError("the empty graph has no diameter")
    return max(eccentricity(graph, node) for node in graph)


def center(graph: Graph) -> list[Node]:
    """Nodes of minimum eccentricity."""
    ecc = {node: eccentricity(graph, node) for node in graph}
    smallest = min(ecc.values())
    return [node for node, value in ecc.items() if value == smallest]


# --- flows and cuts ------------------------------------------------------------------------------


@dataclass
class FlowResult:
    value: float
    flows: dict[Node, dict[Node, float]] = field(default_factory=dict)

    def flow(self, u: Node, v: Node) -> float:
        return self.flows.get(u, {}).get(v, 0)


def _residual_graph(graph: Graph, capacity: str) -> dict[Node, dict[Node, float]]:
    """Residual capacities: every edge u -> v, plus a reverse entry v -> u that starts at zero."""
    residual: dict[Node, dict[Node, float]] = {node: {} for node in graph}
    for u in graph:
        for v, data in graph._succ[u].items():
            cap = data.get(capacity, data["weight"])
            if cap < 0:
                raise GraphError(f"edge {u!r} -> {v!r} has negative capacity")
            residual[u][v] = residual[u].get(v, 0) + cap
    return residual


def _augmenting_path(residual: dict[Node, dict[Node, float]], source: Node, sink: Node) -> list[Node] | None:
    """The shortest (fewest edges) path with spare capacity, by BFS."""
    parent: dict[Node, Node | None] = {source: None}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        for nxt, spare in residual[node].items():
            if spare > 0 and nxt not in parent:
                parent[nxt] = node
                if nxt == sink:
                    return _walk_back(parent, sink)
                queue.append(nxt)
    return None


def _saturate(residual: dict[Node, dict[Node, float]], source: Node, sink: Node) -> float:
    """Push flow along shortest augmenting paths until none is left (Edmonds-Karp); returns the flow value.

    Pushing flow along u -> v frees the same amount on v -> u, so a later path can undo it.
    """
    value = 0.0
    while (path := _augmenting_path(residual, source, sink)) is not None:
        bottleneck = min(residual[u][v] for u, v in zip(path, path[1:]))
        for u, v in zip(path, path[1:]):
            residual[u][v] -= bottleneck
        value += bottleneck
    return value


def max_flow(graph: Graph, source: Node, sink: Node, capacity: str = "capacity") -> FlowResult:
    """Maximum flow by Edmonds-Karp. Capacities come from the `capacity` edge attribute, else the weight.

    An undirected edge can carry flow either way, up to its capacity.
    """
    graph._check(source, sink)
    if source == sink:
        raise GraphError("source and sink must differ")
    residual = _residual_graph(graph, capacity)
    value = _saturate(residual, source, sink)
    flows: dict[Node, dict[Node, float]] = {}
    for u in graph:
        for v, data in graph._succ[u].items():
            cap = data.get(capacity, data["weight"])
            sent = cap - residual[u][v]
            if not graph.directed:
                sent = (sent - (cap - residual[v][u])) / 2 if u != v else 0
            if sent > 0:
                flows.setdefault(u, {})[v] = sent
    return FlowResult(value, flows)


def min_cut(graph: Graph, source: Node, sink: Node, capacity: str = "capacity") -> tuple[float, set[Node], set[Node]]:
    """The minimum s-t cut: its capacity and the two sides (source side first)."""
    graph._check(source, sink)
    if source == sink:
        raise GraphError("source and sink must differ")
    residual = _residual_graph(graph, capacity)
    value = _saturate(residual, source, sink)
    reachable = {source}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        for nxt, spare in residual[node].items():
            if spare > 0 and nxt not in reachable:
                reachable.add(nxt)
                queue.append(nxt)
    return value, reachable, set(graph.nodes) - reachable


# --- spanning trees ------------------------------------------------------------------------------


class UnionFind:
    """Disjoint sets with union by size and path halving."""

    def __init__(self, items: Iterable[Node] = ()) -> None:
        self.parent: dict[Node, Node] = {}
        self.size: dict[Node, int] = {}
        for item in items:
            self.add(item)

    def add(self, item: Node) -> None:
        if item not in self.parent:
            self.parent[item] = item
            self.size[item] = 1

    def find(self, item: Node) -> Node:
        self.add(item)
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, a: Node, b: Node) -> bool:
        """Merge the sets of `a` and `b`; False if they were already one set."""
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return False
        if self.size[root_a] < self.size[root_b]:
            root_a, root_b = root_b, root_a
        self.parent[root_b] = root_a
        self.size[root_a] += self.size[root_b]
        return True

    def groups(self) -> list[set[Node]]:
        out: dict[Node, set[Node]] = {}
        for item in self.parent:
            out.setdefault(self.find(item), set()).add(item)
        return list(out.values())


def kruskal(graph: Graph) -> Graph:
    """A minimum spanning forest of an undirected graph."""
    if graph.directed:
        raise GraphError("spanning trees need an undirected graph")
    forest = Graph()
    sets = UnionFind(graph.nodes)
    for node in graph:
        forest.add_node(node, **graph.node_attrs(node))
    for u, v, w in sorted(graph.edges(), key=lambda edge: edge[2]):
        if sets.union(u, v):
            forest.add_edge(u, v, weight=w)
    return forest


def prim(graph: Graph, root: Node | None = None) -> Graph:
    """A minimum spanning tree of the component containing `root` (default: the first node)."""
    if graph.directed:
        raise GraphError("spanning trees need an undirected graph")
    if not len(graph):
        return Graph()
    root = graph.nodes[0] if root is None else root
    graph._check(root)
    tree = Graph()
    tree.add_node(root)
    tie = itertools.count()
    heap = [(w, next(tie), root, v) for v, w in graph.out_edges(root)]
    heapq.heapify(heap)
    while heap:
        w, _, u, v = heapq.heappop(heap)
        if v in tree:
            continue
        tree.add_edge(u, v, weight=w)
        for nxt, weight in graph.out_edges(v):
            if nxt not in tree:
                heapq.heappush(heap, (weight, next(tie), v, nxt))
    return tree


def total_weight(graph: Graph) -> float:
    return sum(w for _, _, w in graph.edges())


# --- cut vertices, bridges, Euler tours ------------------------------------------------------------


def _lowpoints(graph: Graph) -> tuple[set[Node], list[tuple[Node, Node]]]:
    """Articulation points and bridges of an undirected graph in one iterative DFS (Tarjan)."""
    if graph.directed:
        raise GraphError("cut vertices and bridges are defined for undirected graphs")
    discovery: dict[Node, int] = {}
    low: dict[Node, int] = {}
    points: set[Node] = set()
    bridges: list[tuple[Node, Node]] = []
    counter = itertools.count()
    for root in graph:
        if root in discovery:
            continue
        discovery[root] = low[root] = next(counter)
        root_children = 0
        stack = [(root, None, iter(graph.successors(root)))]
        while stack:
            node, parent, children = stack[-1]
            for child in children:
                if child == parent:
                    continue
                if child in discovery:
                    low[node] = min(low[node], discovery[child])
                    continue
                discovery[child] = low[child] = next(counter)
                if node == root:
                    root_children += 1
                stack.append((child, node, iter(graph.successors(child))))
                break
            else:
                stack.pop()
                if parent is not None:
                    low[parent] = min(low[parent], low[node])
                    if low[node] > discovery[parent]:
                        bridges.append((parent, node))
                    if parent != root and low[node] >= discovery[parent]:
                        points.add(parent)
        if root_children > 1:
            points.add(root)
    return points, bridges


def articulation_points(graph: Graph) -> set[Node]:
    """Nodes whose removal disconnects their component."""
    return _lowpoints(graph)[0]


def bridges(graph: Graph) -> list[tuple[Node, Node]]:
    """Edges whose removal disconnects their component."""
    return _lowpoints(graph)[1]


def eulerian_path(graph: Graph) -> list[Node] | None:
    """A walk using every edge exactly once (Hierholzer), or None if there is none.

    Directed graphs need in-degree == out-degree everywhere except possibly one start (+1 out) and one
    end (+1 in); undirected graphs need zero or two nodes of odd degree. Edges must all lie in one component.
    """
    if graph.number_of_edges() == 0:
        return None
    if graph.directed:
        surplus = {n: graph.out_degree(n) - graph.in_degree(n) for n in graph}
        starts = [n for n, d in surplus.items() if d == 1]
        ends = [n for n, d in surplus.items() if d == -1]
        if any(abs(d) > 1 for d in surplus.values()) or len(starts) != len(ends) or len(starts) > 1:
            return None
        start = starts[0] if starts else next(n for n in graph if graph.out_degree(n))
    else:
        odd = [n for n in graph if graph.degree(n) % 2]
        if len(odd) not in (0, 2):
            return None
        start = odd[0] if odd else next(n for n in graph if graph.degree(n))
    remaining: dict[Node, list[Node]] = {n: list(graph.successors(n)) for n in graph}
    used: set[tuple[Node, Node]] = set()
    stack = [start]
    walk: list[Node] = []
    while stack:
        node = stack[-1]
        while remaining[node]:
            nxt = remaining[node].pop()
            key = (node, nxt) if graph.directed else tuple(sorted((node, nxt), key=repr))
            if key in used:
                continue
            used.add(key)
            stack.append(nxt)
            break
        else:
            walk.append(stack.pop())
    if len(walk) != graph.number_of_edges() + 1:
        return None  # some edges live in another component
    return walk[::-1]


# --- matching and colouring ------------------------------------------------------------------------


def bipartite_matching(graph: Graph, left: Iterable[Node]) -> dict[Node, Node]:
    """A maximum matching between `left` and the other nodes, by augmenting paths (Kuhn's algorithm).

    Returns left node -> matched right node.
    """
    left_nodes = list(left)
    graph._check(*left_nodes)
    match_of_right: dict[Node, Node] = {}

    def try_assign(node: Node, visited: set[Node]) -> bool:
        for candidate in graph.successors(node):
            if candidate in visited:
                continue
            visited.add(candidate)
            if candidate not in match_of_right or try_assign(match_of_right[candidate], visited):
                match_of_right[candidate] = node
                return True
        return False

    for node in left_nodes:
        try_assign(node, set())
    return {l: r for r, l in match_of_right.items()}


def greedy_colouring(graph: Graph, strategy: str = "largest_first") -> dict[Node, int]:
    """Colour nodes so that neighbours differ, greedily. Strategies: 'largest_first', 'dsatur', 'insertion'."""
    undirected = graph.to_undirected() if graph.directed else graph
    colours: dict[Node, int] = {}

    def smallest_free(node: Node) -> int:
        taken = {colours[n] for n in undirected.successors(node) if n in colours}
        return next(c for c in itertools.count() if c not in taken)

    if strategy == "insertion":
        order = undirected.nodes
    elif strategy == "largest_first":
        order = sorted(undirected.nodes, key=undirected.degree, reverse=True)
    elif strategy == "dsatur":
        uncoloured = set(undirected.nodes)
        while uncoloured:
            def saturation(n: Node) -> tuple[int, int]:
                return len({colours[m] for m in undirected.successors(n) if m in colours}), undirected.degree(n)
            node = max(sorted(uncoloured, key=repr), key=saturation)
            colours[node] = smallest_free(node)
            uncoloured.discard(node)
        return colours
    else:
        raise ValueError(f"unknown colouring strategy {strategy!r}")
    for node in order:
        colours[node] = smallest_free(node)
    return colours


# --- centrality ----------------------------------------------------------------------------------


def degree_centrality(graph: Graph) -> dict[Node, float]:
    """Degree divided by the largest possible degree (n - 1)."""
    if len(graph) <= 1:
        return dict.fromkeys(graph.nodes, 1.0)
    scale = 1 / (len(graph) - 1)
    return {node: graph.degree(node) * scale for node in graph}


def closeness_centrality(graph: Graph) -> dict[Node, float]:
    """(reachable - 1) / total distance to them, scaled by the reachable share (Wasserman-Faust)."""
    out = {}
    n = len(graph)
    for node in graph:
        dist = shortest_path_lengths(graph.reverse() if graph.directed else graph, node)
        total = sum(dist.values())
        reached = len(dist) - 1
        out[node] = (reached / total) * (reached / (n - 1)) if total > 0 and n > 1 else 0.0
    return out


def betweenness_centrality(graph: Graph, normalized: bool = True, weighted: bool = False) -> dict[Node, float]:
    """Brandes' algorithm: the share of shortest paths between other pairs that pass through each node."""
    score = dict.fromkeys(graph.nodes, 0.0)
    for source in graph:
        order: list[Node] = []
        preds: dict[Node, list[Node]] = {n: [] for n in graph}
        sigma = dict.fromkeys(graph.nodes, 0.0)
        sigma[source] = 1.0
        dist: dict[Node, float] = {source: 0}
        if weighted:
            tie = itertools.count()
            heap = [(0.0, next(tie), source, source)]
            settled: set[Node] = set()
            while heap:
                d, _, node, pred = heapq.heappop(heap)
                if node in settled:
                    if d == dist[node] and pred != node:
                        sigma[node] += sigma[pred]
                        preds[node].append(pred)
                    continue
                settled.add(node)
                if pred != node:
                    sigma[node] += sigma[pred]
                    preds[node].append(pred)
                order.append(node)
                for nxt, w in graph.out_edges(node):
                    nd = d + w
                    if nxt not in settled and nd <= dist.get(nxt, INF):
                        dist[nxt] = nd
                        heapq.heappush(heap, (nd, next(tie), nxt, node))
        else:
            queue = deque([source])
            while queue:
                node = queue.popleft()
                order.append(node)
                for nxt in graph.successors(node):
                    if nxt not in dist:
                        dist[nxt] = dist[node] + 1
                        queue.append(nxt)
                    if dist[nxt] == dist[node] + 1:
                        sigma[nxt] += sigma[node]
                        preds[nxt].append(node)
        delta = dict.fromkeys(graph.nodes, 0.0)
        for node in reversed(order):
            for pred in preds[node]:
                delta[pred] += sigma[pred] / sigma[node] * (1 + delta[node])
            if node != source:
                score[node] += delta[node]
    n = len(graph)
    if not graph.directed:
        score = {node: value / 2 for node, value in score.items()}
    if normalized and n > 2:
        pairs = (n - 1) * (n - 2) / (1 if graph.directed else 2)
        score = {node: value / pairs for node, value in score.items()}
    return score


def pagerank(graph: Graph, damping: float = 0.85, tolerance: float = 1e-10, max_iterations: int = 200) -> dict[Node, float]:
    """PageRank by power iteration; dangling nodes spread their rank evenly. Ranks sum to 1."""
    n = len(graph)
    if n == 0:
        return {}
    rank = dict.fromkeys(graph.nodes, 1 / n)
    out_weight = {node: sum(w for _, w in graph.out_edges(node)) for node in graph}
    for _ in range(max_iterations):
        dangling = sum(rank[node] for node in graph if out_weight[node] == 0)
        new = dict.fromkeys(graph.nodes, (1 - damping) / n + damping * dangling / n)
        for node in graph:
            if out_weight[node]:
                share = damping * rank[node] / out_weight[node]
                for nxt, w in graph.out_edges(node):
                    new[nxt] += share * w
        if sum(abs(new[node] - rank[node]) for node in graph) < tolerance:
            return new
        rank = new
    raise GraphError(f"pagerank did not converge in {max_iterations} iterations")


# --- text formats --------------------------------------------------------------------------------


def parse_edge_list(text: str, directed: bool = False) -> Graph:
    """Read 'u v [weight]' lines; '#' starts a comment, a line with one name adds a lone node."""
    graph = Graph(directed)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) == 1:
            graph.add_node(parts[0])
        elif len(parts) in (2, 3):
            weight: float = 1
            if len(parts) == 3:
                try:
                    weight = float(parts[2])
                except ValueError:
                    raise GraphError(f"line {lineno}: weight {parts[2]!r} is not a number") from None
                if weight.is_integer():
                    weight = int(weight)
            graph.add_edge(parts[0], parts[1], weight=weight)
        else:
            raise GraphError(f"line {lineno}: expected 'u v [weight]', got {raw!r}")
    return graph


def to_dot(graph: Graph, name: str = "G") -> str:
    """Graphviz DOT source; weights other than 1 become edge labels."""
    def quote(node: Node) -> str:
        return '"' + str(node).replace("\\", "\\\\").replace('"', '\\"') + '"'

    arrow = "->" if graph.directed else "--"
    lines = [f"{'digraph' if graph.directed else 'graph'} {quote(name)} {{"]
    for node in graph:
        if not graph.successors(node) and not graph.predecessors(node):
            lines.append(f"  {quote(node)};")
    for u, v, w in graph.edges():
        label = f' [label="{w}"]' if w != 1 else ""
        lines.append(f"  {quote(u)} {arrow} {quote(v)}{label};")
    lines.append("}")
    return "\n".join(lines) + "\n"
