import math

import pytest

from planar import GeometryError, Line, Polygon, PolygonWithHoles, Vec
from planar import geometry as geo

SQUARE = Polygon([(0, 0), (4, 0), (4, 4), (0, 4)])
# An L-shaped (concave) room.
ELL = Polygon([(0, 0), (6, 0), (6, 2), (2, 2), (2, 6), (0, 6)])


def test_area_perimeter_centroid():
    assert SQUARE.area() == 16 and SQUARE.perimeter() == 16
    assert ELL.area() == 20
    assert ELL.centroid().rounded() == Vec(2.2, 2.2)
    assert Polygon(reversed(SQUARE.vertices)).signed_area() == -16
    assert Polygon([(0, 0), (1, 0), (1, 1), (0, 0)]).vertices[-1] == Vec(1, 1)  # closed rings accepted


def test_too_few_vertices():
    with pytest.raises(GeometryError):
        Polygon([(0, 0), (1, 1)])


def test_containment_concave():
    assert ELL.contains((1, 5)) and ELL.contains((5, 1))
    assert not ELL.contains((4, 4))
    assert ELL.contains((2, 4)) and not ELL.contains((2, 4), boundary=False)
    assert ELL.winding_number(Vec(1, 1)) == 1 and ELL.winding_number(Vec(4, 4)) == 0
    assert ELL.distance_to((4, 4)) == 2


def test_convexity_and_simplicity():
    assert SQUARE.is_convex() and not ELL.is_convex()
    assert Polygon([(0, 0), (2, 0), (4, 0), (4, 4), (0, 4)]).is_convex()  # a vertex in the middle of an edge
    bowtie = Polygon([(0, 0), (4, 4), (4, 0), (0, 4)])
    assert ELL.is_simple() and not bowtie.is_simple()


def test_triangulation_covers_the_polygon():
    triangles = ELL.triangulate()
    assert len(triangles) == 4
    assert math.isclose(sum(geo.triangle_area(*t) for t in triangles), ELL.area())


def test_clip_and_split():
    window = Polygon.rectangle(2, -1, 10, 10)
    clipped = ELL.clip(window)
    assert clipped.area() == 8  # (2..6 x 0..2) + (2..2 ...) => 8
    left, right = geo.split_polygon(SQUARE, Line.through((2, -1), (2, 5)))
    assert left.area() == 8 and right.area() == 8
    assert SQUARE.clip(Polygon.rectangle(10, 10, 11, 11)) is None


def test_offset_and_transforms():
    grown = geo.offset_convex(SQUARE, 1)
    assert grown.area() == 36
    with pytest.raises(GeometryError):
        geo.offset_convex(SQUARE, -3)
    assert SQUARE.rotated(math.pi / 2).area() == pytest.approx(16)
    assert SQUARE.scaled(0.5).bbox() == geo.BBox(1, 1, 3, 3)


def test_without_collinear():
    poly = Polygon([(0, 0), (2, 0), (4, 0), (4, 4), (4, 4), (0, 4)])
    assert len(poly.without_collinear()) == 4


def test_polygon_with_holes():
    frame = PolygonWithHoles(Polygon.rectangle(0, 0, 10, 10), [Polygon.rectangle(4, 4, 6, 6)])
    assert frame.area() == 96
    assert frame.contains((1, 1)) and not frame.contains((5, 5)) and frame.contains((4, 5))
    assert frame.centroid().rounded() == Vec(5, 5)


def test_rasterize():
    cells = geo.rasterize(Polygon.rectangle(0, 0, 3, 2))
    assert sorted(cells) == [(i, j) for i in range(3) for j in range(2)]
    assert len(geo.rasterize(ELL)) == 20


def test_interior_angles_sum():
    angles = geo.interior_angles(ELL)
    assert math.isclose(sum(angles), (len(ELL) - 2) * math.pi)
    assert max(angles) == pytest.approx(3 * math.pi / 2)


def test_interior_points_of_a_concave_shape():
    inside = geo.point_on_surface(ELL)
    assert ELL.contains(inside, boundary=False)
    pole, radius = geo.pole_of_inaccessibility(SQUARE, precision=0.01)
    assert pole.distance(Vec(2, 2)) < 0.05 and radius == pytest.approx(2, abs=0.02)


def test_segment_inside_concave_polygon():
    assert geo.segment_inside(ELL, Vec(1, 1), Vec(5, 1))
    assert not geo.segment_inside(ELL, Vec(5, 1), Vec(1, 5))  # cuts across the missing corner


def test_shortest_path_around_a_wall():
    wall = Polygon.rectangle(4, -1, 5, 3)
    path, length = geo.shortest_path_around([wall], (0, 0), (9, 0))
    assert path == [Vec(0, 0), Vec(4, -1), Vec(5, -1), Vec(9, 0)]
    assert length == pytest.approx(2 * math.hypot(4, 1) + 1)
    assert geo.shortest_path_around([], (0, 0), (3, 4))[1] == 5
