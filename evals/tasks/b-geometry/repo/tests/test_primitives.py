import math

import pytest

from planar import BBox, Circle, GeometryError, Line, Segment, Triangle, Vec
from planar import geometry as geo


def close(p, q, eps=1e-9):
    return p.almost_equals(q, eps)


def test_vector_algebra():
    a, b = Vec(3, 4), Vec(1, 0)
    assert a.norm() == 5 and a.dot(b) == 3 and b.cross(a) == 4
    assert close(Vec(1, 0).rotate(math.pi / 2), Vec(0, 1))
    assert close(Vec(2, 0).rotate(math.pi, about=Vec(1, 0)), Vec(0, 0))
    assert math.isclose(Vec(1, 0).angle_to(Vec(0, -1)), -math.pi / 2)
    with pytest.raises(GeometryError):
        Vec(0, 0).normalized()


def test_orientation():
    assert geo.orientation(Vec(0, 0), Vec(1, 0), Vec(1, 1)) == 1
    assert geo.orientation(Vec(0, 0), Vec(1, 0), Vec(1, -1)) == -1
    assert geo.orientation(Vec(0, 0), Vec(1, 1), Vec(3, 3)) == 0


def test_segment_intersections():
    s = Segment.of((0, 0), (4, 4))
    assert close(s.intersection(Segment.of((0, 4), (4, 0))), Vec(2, 2))
    assert s.intersects(Segment.of((4, 4), (5, 0)))  # touching at an endpoint counts
    assert s.intersection(Segment.of((5, 5), (6, 6))) is None
    overlap = s.intersection(Segment.of((2, 2), (9, 9)))
    assert isinstance(overlap, Segment) and close(overlap.a, Vec(2, 2)) and close(overlap.b, Vec(4, 4))
    assert math.isclose(Segment.of((0, 0), (10, 0)).distance_to(Vec(5, 3)), 3)
    assert math.isclose(Segment.of((0, 0), (1, 0)).distance_to_segment(Segment.of((3, 0), (3, 5))), 2)


def test_lines():
    line = Line.through((0, 1), (1, 2))  # y = x + 1
    assert math.isclose(line.distance_to(Vec(0, 0)), math.sqrt(0.5))
    assert line.side(Vec(0, 5)) == 1 and line.side(Vec(0, -5)) == -1
    assert close(line.intersection(Line.from_coefficients(1, 0, 3)), Vec(3, 4))
    assert line.intersection(Line.through((0, 0), (1, 1))) is None
    assert close(line.reflect(Vec(0, 0)), Vec(-1, 1))


def test_circles():
    c = Circle(Vec(0, 0), 5)
    hits = c.line_intersections(Line.through((-10, 3), (10, 3)))
    assert [h.rounded() for h in hits] == [Vec(-4, 3), Vec(4, 3)]
    assert [p.rounded() for p in c.circle_intersections(Circle(Vec(8, 0), 5))] == [Vec(4, 3), Vec(4, -3)]
    assert len(c.tangent_points(Vec(10, 0))) == 2 and c.tangent_points(Vec(1, 1)) == []
    circum = Circle.through_three((0, 0), (4, 0), (0, 3))
    assert close(circum.center, Vec(2, 1.5)) and math.isclose(circum.radius, 2.5)
    assert math.isclose(Circle.inscribed((0, 0), (4, 0), (0, 3)).radius, 1)
    with pytest.raises(GeometryError):
        Circle.through_three((0, 0), (1, 1), (2, 2))


def test_min_enclosing_circle():
    pts = [(0, 0), (4, 0), (2, 1), (2, -1), (1, 0.5)]
    circle = geo.min_enclosing_circle(pts)
    assert close(circle.center, Vec(2, 0)) and math.isclose(circle.radius, 2)
    assert all(circle.contains(geo.as_vec(p)) for p in pts)


def test_bbox():
    box = BBox.of_points([(1, 5), (3, -1), (2, 2)])
    assert (box.width, box.height, box.area()) == (2, 6, 12)
    assert box.intersection(BBox(2, 0, 10, 1)) == BBox(2, 0, 3, 1)
    assert box.intersection(BBox(5, 5, 6, 6)) is None
    with pytest.raises(GeometryError):
        BBox(1, 1, 0, 0)


def test_triangle():
    t = Triangle.of((0, 0), (4, 0), (0, 3))
    assert t.area() == 6 and t.kind() == "right"
    assert t.contains((1, 1)) and not t.contains((3, 3))
    u, v, w = t.barycentric((0, 0))
    assert (round(u, 9), round(v, 9), round(w, 9)) == (1, 0, 0)
    assert close(t.orthocenter(), Vec(0, 0))
    assert Triangle.of((0, 0), (10, 0), (1, 1)).kind() == "obtuse"


def test_affine_transforms():
    from planar import Affine

    t = Affine.translation(2, 3) @ Affine.rotation(math.pi / 2)
    assert close(t((1, 0)), Vec(2, 4))
    assert t.inverse().almost_equals(Affine.rotation(-math.pi / 2) @ Affine.translation(-2, -3))
    fitted = Affine.from_points([(0, 0), (1, 0), (0, 1)], [(1, 1), (3, 1), (1, 4)])
    assert close(fitted((1, 1)), Vec(3, 4))
    mirror = Affine.reflection(Line.through((0, 0), (1, 1)))
    assert close(mirror((2, 0)), Vec(0, 2)) and not mirror.preserves_orientation()
    assert close(Affine.scaling(2, about=(1, 1))((2, 2)), Vec(3, 3))


def test_angles():
    assert math.isclose(geo.angle_between((1, 0), (0, 0), (0, 1)), math.pi / 2)
    assert math.isclose(geo.bearing((0, 0), (1, 0)), 90) and math.isclose(geo.bearing((0, 0), (0, -1)), 180)
    assert math.isclose(geo.normalize_angle(-math.pi / 2), 3 * math.pi / 2)
