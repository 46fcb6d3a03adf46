import math
import random

import pytest

from planar import (
    BBox,
    GeometryError,
    GridIndex,
    Polygon,
    Segment,
    Vec,
    closest_pair,
    convex_hull,
    delaunay,
    farthest_pair,
    from_geojson,
    from_wkt,
    min_area_rect,
    simplify_polyline,
    to_geojson,
    to_wkt,
)
from planar import geometry as geo


def test_convex_hull_of_scattered_points():
    pts = [(0, 0), (2, 1), (4, 0), (3, 2), (4, 4), (1, 3), (0, 4), (2, 2)]
    assert convex_hull(pts) == [Vec(0, 0), Vec(4, 0), Vec(4, 4), Vec(0, 4)]


def test_convex_hull_drops_points_on_edges():
    grid = [(x, y) for x in range(3) for y in range(3)]
    assert convex_hull(grid) == [Vec(0, 0), Vec(2, 0), Vec(2, 2), Vec(0, 2)]
    assert convex_hull([(0, 0), (1, 1), (2, 2), (3, 3)]) == [Vec(0, 0), Vec(3, 3)]


def test_convex_hull_degenerate_inputs():
    assert convex_hull([]) == []
    assert convex_hull([(1, 1), (1, 1)]) == [Vec(1, 1)]
    with pytest.raises(GeometryError):
        geo.convex_hull_polygon([(0, 0), (1, 1), (2, 2)])


def test_point_in_convex_polygon_matches_general_test():
    rng = random.Random(7)
    hull = convex_hull([(rng.uniform(-5, 5), rng.uniform(-5, 5)) for _ in range(60)])
    polygon = Polygon(hull)
    for _ in range(200):
        p = Vec(rng.uniform(-6, 6), rng.uniform(-6, 6))
        assert geo.in_convex_polygon(hull, p) == polygon.contains(p)


def test_closest_and_farthest_pairs():
    rng = random.Random(3)
    pts = [Vec(rng.uniform(0, 100), rng.uniform(0, 100)) for _ in range(300)]
    a, b, d = closest_pair(pts)
    brute = min(p.distance(q) for i, p in enumerate(pts) for q in pts[i + 1:])
    assert math.isclose(d, brute) and math.isclose(a.distance(b), d)
    a, b, d = farthest_pair(pts)
    brute = max(p.distance(q) for i, p in enumerate(pts) for q in pts[i + 1:])
    assert math.isclose(d, brute)


def test_min_area_rect_of_rotated_rectangle():
    rect = Polygon.rectangle(0, 0, 4, 2).rotated(math.radians(30), about=(0, 0))
    best = min_area_rect(list(rect.vertices) + [Vec(1, 1).rotate(math.radians(30))])
    assert best.area() == pytest.approx(8)


def test_minkowski_sum_of_squares():
    unit = Polygon.rectangle(0, 0, 1, 1)
    total = geo.minkowski_sum(unit, Polygon.rectangle(0, 0, 2, 2))
    assert total == Polygon([(0, 0), (3, 0), (3, 3), (0, 3)])


def test_polylines():
    line = [(0, 0), (3, 0), (3, 4)]
    assert geo.polyline_length(line) == 7
    assert geo.point_along(line, 5) == Vec(3, 2)
    assert geo.resample([(0, 0), (10, 0)], 3) == [Vec(0, 0), Vec(5, 0), Vec(10, 0)]
    wiggly = [(0, 0), (1, 0.05), (2, -0.05), (3, 0), (3, 3)]
    assert simplify_polyline(wiggly, 0.1) == [Vec(0, 0), Vec(3, 0), Vec(3, 3)]
    assert geo.hausdorff_distance([(0, 0), (2, 0)], [(0, 1), (2, 1)]) == 1
    assert geo.discrete_frechet([(0, 0), (1, 0), (2, 0)], [(0, 1), (2, 1)]) == pytest.approx(math.sqrt(2))


def test_simplify_polygon():
    circle = Polygon.regular(64, 10)
    simple = geo.simplify_polygon(circle, 0.5)
    assert 6 < len(simple) < 64 and simple.area() == pytest.approx(circle.area(), rel=0.05)


def test_delaunay_square_with_center():
    tris = delaunay([(0, 0), (2, 0), (2, 2), (0, 2), (1, 1)])
    assert len(tris) == 4
    assert sum(geo.triangle_area(*t) for t in tris) == pytest.approx(4)
    for a, b, c in tris:
        circle = geo.Circle.through_three(a, b, c)
        assert not any(circle.contains(p, -1e-9) for p in map(Vec, [0, 2, 2, 0, 1], [0, 0, 2, 2, 1]) if p not in (a, b, c))


def test_voronoi_cells_partition_the_box():
    box = BBox(0, 0, 10, 10)
    cells = geo.voronoi_cells([(2, 2), (8, 2), (5, 8)], box)
    assert sum(cell.area() for cell in cells.values()) == pytest.approx(100)
    assert cells[Vec(2, 2)].contains((0, 0))


def test_grid_index():
    index = GridIndex(10)
    handles = {name: index.insert_point(name, p) for name, p in [("a", (1, 1)), ("b", (15, 15)), ("c", (50, 50))]}
    index.insert("road", Segment.of((0, 20), (100, 20)).bbox())
    assert index.query(BBox(0, 0, 20, 20)) == ["a", "b", "road"]
    assert index.nearby((14, 14), 2) == ["b"]
    assert index.nearest((48, 47)) == "c"
    index.remove(handles["b"])
    assert index.nearby((14, 14), 2) == []


def test_segment_intersections_all_pairs():
    segs = [Segment.of((0, 0), (4, 4)), Segment.of((0, 4), (4, 0)), Segment.of((10, 10), (11, 11)), Segment.of((4, 4), (6, 4))]
    found = geo.segment_intersections(segs)
    assert [(i, j) for i, j, _ in found] == [(0, 1), (0, 3)]


def test_wkt_round_trip():
    assert from_wkt("POINT (1 2)") == Vec(1, 2)
    assert to_wkt(Polygon.rectangle(0, 0, 1, 2)) == "POLYGON ((0 0, 1 0, 1 2, 0 2, 0 0))"
    ring = from_wkt("POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (4 4, 6 4, 6 6, 4 6, 4 4))")
    assert ring.area() == 96 and from_wkt(to_wkt(ring)).area() == 96
    assert to_wkt([Vec(0.5, -1e-12), Vec(2, 3)], precision=3) == "LINESTRING (0.5 0, 2 3)"
    assert from_wkt("LINESTRING EMPTY") is None
    for bad in ("POINT (1)", "POLYGON ((0 0, 1 0, 1 1))", "CIRCLE (0 0 1)", "POLYGON ((0 0, 1 0, 1 1, 0 0)"):
        with pytest.raises(GeometryError):
            from_wkt(bad)


def test_geojson_orientation():
    cw = Polygon([(0, 0), (0, 1), (1, 1), (1, 0)])
    obj = to_geojson(cw)
    assert obj["coordinates"][0][0] == obj["coordinates"][0][-1]
    assert Polygon(obj["coordinates"][0]).signed_area() > 0  # RFC 7946: outer rings counter-clockwise
    assert from_geojson(obj).area() == 1
