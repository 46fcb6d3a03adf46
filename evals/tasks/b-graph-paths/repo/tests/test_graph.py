import math

import pytest

from graphkit import Graph, GraphError, NegativeCycle, NoPath, NodeNotFound, NotADAG
from graphkit import graph as g


@pytest.fixture
def roads():
    # A small undirected road map with distances.
    return Graph.from_edges([
        ("A", "B", 7), ("A", "C", 9), ("A", "F", 14), ("B", "C", 10), ("B", "D", 15),
        ("C", "D", 11), ("C", "F", 2), ("D", "E", 6), ("E", "F", 9),
    ])


def test_graph_basics():
    graph = Graph(directed=True)
    graph.add_edge("a", "b", weight=3, label="x")
    graph.add_edge("b", "c")
    assert graph.successors("a") == ["b"] and graph.predecessors("b") == ["a"]
    assert graph.edge_attrs("a", "b") == {"label": "x", "weight": 3}
    assert graph.degree("b") == 2
    graph.remove_node("b")
    assert graph.edges() == [] and graph.nodes == ["a", "c"]
    with pytest.raises(NodeNotFound):
        graph.successors("zzz")
    with pytest.raises(GraphError):
        graph.add_edge("a", "c", weight=math.nan)


def test_undirected_edges_listed_once(roads):
    assert roads.number_of_edges() == 9
    assert roads.weight("F", "C") == 2
    roads.remove_edge("F", "C")
    assert not roads.has_edge("C", "F")


def test_dict_round_trip(roads):
    again = Graph.from_dict(roads.to_dict())
    assert again.edges() == roads.edges()


def test_traversals():
    graph = Graph.from_edges([(1, 2), (1, 3), (2, 4), (3, 4), (4, 5)], directed=True)
    assert g.bfs(graph, 1) == [1, 2, 3, 4, 5]
    assert g.dfs(graph, 1) == [1, 2, 4, 5, 3]
    assert list(g.bfs_layers(graph, 1)) == [[1], [2, 3], [4], [5]]
    assert g.nodes_within(graph, 1, 2) == {1, 2, 3, 4}
    assert g.bfs_path(graph, 1, 5) == [1, 2, 4, 5]
    assert sorted(g.all_simple_paths(graph, 1, 4)) == [[1, 2, 4], [1, 3, 4]]
    assert not g.has_path(graph, 5, 1)


def test_topological_sort_and_cycles():
    dag = Graph.from_edges([("shirt", "tie"), ("tie", "jacket"), ("trousers", "shoes"), ("trousers", "jacket")], directed=True)
    order = g.topological_sort(dag)
    assert order.index("tie") < order.index("jacket") and order.index("trousers") < order.index("shoes")
    dag.add_edge("jacket", "shirt")
    with pytest.raises(NotADAG) as info:
        g.topological_sort(dag)
    assert info.value.cycle == ["shirt", "tie", "jacket", "shirt"]


def test_components(roads):
    roads.add_edge("X", "Y")
    assert [sorted(c) for c in g.connected_components(roads)] == [list("ABCDEF"), ["X", "Y"]]
    directed = Graph.from_edges([(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (5, 4)], directed=True)
    assert sorted(map(sorted, g.strongly_connected_components(directed))) == [[1, 2, 3], [4, 5]]
    dag, member_of = g.condensation(directed)
    assert dag.has_edge(member_of[1], member_of[4])


def test_bipartite_and_colouring():
    square = Graph.from_edges([(1, 2), (2, 3), (3, 4), (4, 1)])
    assert g.is_bipartite(square)[0]
    square.add_edge(1, 3)
    assert not g.is_bipartite(square)[0]
    colours = g.greedy_colouring(square, "dsatur")
    assert all(colours[u] != colours[v] for u, v, _ in square.edges()) and max(colours.values()) == 2


def test_dijkstra_shortest_path(roads):
    path = g.shortest_path(roads, "A", "E")
    assert path.nodes == ["A", "C", "F", "E"] and path.weight == 20
    assert g.shortest_path_lengths(roads, "A")["D"] == 20
    roads.add_node("island")
    with pytest.raises(NoPath):
        g.shortest_path(roads, "A", "island")


def test_astar_on_grid():
    grid = Graph()
    for x in range(5):
        for y in range(5):
            if x < 4:
                grid.add_edge((x, y), (x + 1, y))
            if y < 4:
                grid.add_edge((x, y), (x, y + 1))
    grid.remove_node((2, 2))
    path = g.astar(grid, (0, 0), (4, 4), lambda a, b: abs(a[0] - b[0]) + abs(a[1] - b[1]))
    assert path.weight == 8 and (2, 2) not in path.nodes


def test_bellman_ford_negative_edges_and_cycles():
    graph = Graph.from_edges([("s", "a", 4), ("s", "b", 5), ("b", "a", -3), ("a", "c", 2)], directed=True)
    dist, _ = g.bellman_ford(graph, "s")
    assert dist == {"s": 0, "a": 2, "b": 5, "c": 4}
    graph.add_edge("c", "b", weight=-1)
    with pytest.raises(NegativeCycle):
        g.bellman_ford(graph, "s")


def test_floyd_warshall_matches_dijkstra(roads):
    table = g.floyd_warshall(roads)
    for node in roads:
        assert table[node] == g.shortest_path_lengths(roads, node)


def test_k_shortest_paths(roads):
    paths = g.k_shortest_paths(roads, "A", "D", 3)
    assert [(p.nodes, p.weight) for p in paths] == [
        (["A", "C", "D"], 20),
        (["A", "B", "D"], 22),
        (["A", "C", "F", "E", "D"], 26),
    ]


def test_dag_longest_path_and_diameter(roads):
    tasks = Graph.from_edges([("start", "a", 3), ("start", "b", 2), ("a", "end", 4), ("b", "end", 6)], directed=True)
    assert g.dag_longest_path(tasks).nodes == ["start", "b", "end"]
    assert g.diameter(roads) == 21  # B <-> E
    assert g.center(roads) == ["C"]


def test_spanning_trees_agree(roads):
    assert g.total_weight(g.kruskal(roads)) == g.total_weight(g.prim(roads)) == 33
    assert g.is_tree(g.kruskal(roads))


def test_max_flow_simple():
    net = Graph(directed=True)
    for u, v, cap in [("s", "a", 3), ("s", "b", 2), ("a", "t", 2), ("b", "t", 3), ("a", "b", 1)]:
        net.add_edge(u, v, capacity=cap)
    result = g.max_flow(net, "s", "t")
    assert result.value == 5
    assert result.flow("s", "a") == 3 and result.flow("a", "b") == 1


def test_max_flow_needs_to_reroute():
    # Breadth-first search finds s-a-b-t first; the maximum needs that unit moved off a -> b.
    net = Graph(directed=True)
    for u, v in [("s", "a"), ("s", "d"), ("a", "b"), ("a", "c"), ("d", "b"), ("b", "t"), ("c", "t")]:
        net.add_edge(u, v, capacity=1)
    result = g.max_flow(net, "s", "t")
    assert result.value == 2
    assert result.flow("a", "b") == 0 and result.flow("a", "c") == 1 and result.flow("d", "b") == 1


def test_min_cut_equals_max_flow():
    net = Graph(directed=True)
    for u, v in [("s", "a"), ("s", "d"), ("a", "b"), ("a", "c"), ("d", "b"), ("b", "t"), ("c", "t")]:
        net.add_edge(u, v, capacity=1)
    value, source_side, sink_side = g.min_cut(net, "s", "t")
    assert value == 2
    assert "s" in source_side and "t" in sink_side


def test_cut_vertices_and_bridges():
    graph = Graph.from_edges([(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (5, 6), (6, 4)])
    assert g.articulation_points(graph) == {3, 4}
    assert g.bridges(graph) == [(3, 4)]


def test_eulerian_path():
    house = Graph.from_edges([(1, 2), (2, 3), (3, 4), (4, 1), (1, 3), (3, 5), (5, 4)])
    walk = g.eulerian_path(house)
    assert walk is not None and len(walk) == 8
    assert {frozenset(e) for e in zip(walk, walk[1:])} == {frozenset((u, v)) for u, v, _ in house.edges()}
    assert g.eulerian_path(Graph.from_edges([(1, 2), (1, 3), (1, 4)])) is None


def test_matching():
    jobs = Graph.from_edges([("ann", "cook"), ("ann", "driver"), ("bob", "cook"), ("cy", "driver"), ("cy", "clerk")])
    matching = g.bipartite_matching(jobs, ["ann", "bob", "cy"])
    assert len(matching) == 3 and matching["bob"] == "cook"


def test_centrality():
    star = Graph.from_edges([("hub", leaf) for leaf in "abcd"])
    assert g.betweenness_centrality(star)["hub"] == 1.0
    assert g.degree_centrality(star)["hub"] == 1.0
    ranks = g.pagerank(Graph.from_edges([("a", "b"), ("b", "c"), ("c", "a"), ("d", "c")], directed=True))
    assert math.isclose(sum(ranks.values()), 1.0) and max(ranks, key=ranks.get) == "c"


def test_text_formats():
    graph = g.parse_edge_list("# roads\nA B 2.5\nB C\nlonely\n", directed=True)
    assert graph.weight("A", "B") == 2.5 and "lonely" in graph
    assert g.to_dot(graph).splitlines() == ['digraph "G" {', '  "lonely";', '  "A" -> "B" [label="2.5"];', '  "B" -> "C";', "}"]
    with pytest.raises(GraphError):
        g.parse_edge_list("A B heavy")
