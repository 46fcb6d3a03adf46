"""2-D computational geometry in plain Python.

Everything works on floats with a shared tolerance `EPS` for "equal", "on the line" and "collinear"
decisions; pass your own `eps=` where a function takes one. Angles are in radians, counter-clockwise
from the positive x axis. Polygons are lists of vertices without repeating the first one at the end;
counter-clockwise (CCW) order is the canonical orientation (positive signed area).

Contents, roughly in the order below:

* `Vec` (points and vectors), orientation tests;
* `Segment`, `Line`, `Circle`, `BBox`;
* `Polygon`: area, centroid, containment, convexity, simplicity, triangulation, clipping;
* algorithms on point sets: `convex_hull`, `closest_pair`, `farthest_pair`, `min_area_rect`,
  `simplify_polyline` (Douglas-Peucker), `polyline_length`;
* `Affine` transforms;
* WKT reading and writing (`to_wkt`, `from_wkt`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Union

EPS = 1e-9


class GeometryError(ValueError):
    """Degenerate or invalid input (zero-length direction, too few vertices, malformed WKT...)."""


def almost_equal(a: float, b: float, eps: float = EPS) -> bool:
    return abs(a - b) <= eps * max(1.0, abs(a), abs(b))


# --- points and vectors --------------------------------------------------------------------------


@dataclass(frozen=True)
class Vec:
    """A point or a vector in the plane (the same thing, as in most geometry code)."""

    x: float
    y: float

    def __add__(self, other: Vec) -> Vec:
        return Vec(self.x + other.x, self.y + other.y)

    def __sub__(self, other: Vec) -> Vec:
        return Vec(self.x - other.x, self.y - other.y)

    def __mul__(self, k: float) -> Vec:
        return Vec(self.x * k, self.y * k)

    __rmul__ = __mul__

    def __truediv__(self, k: float) -> Vec:
        if k == 0:
            raise GeometryError("division of a vector by zero")
        return Vec(self.x / k, self.y / k)

    def __neg__(self) -> Vec:
        return Vec(-self.x, -self.y)

    def __iter__(self) -> Iterator[float]:
        yield self.x
        yield self.y

    def dot(self, other: Vec) -> float:
        return self.x * other.x + self.y * other.y

    def cross(self, other: Vec) -> float:
        """The z component of the 3-D cross product: > 0 when `other` is counter-clockwise from self."""
        return self.x * other.y - self.y * other.x

    def norm(self) -> float:
        return math.hypot(self.x, self.y)

    def norm2(self) -> float:
        return self.x * self.x + self.y * self.y

    def normalized(self) -> Vec:
        length = self.norm()
        if length <= EPS:
            raise GeometryError("cannot normalise a zero vector")
        return self / length

    def perp(self) -> Vec:
        """Rotated 90 degrees counter-clockwise."""
        return Vec(-self.y, self.x)

    def rotate(self, angle: float, about: Vec | None = None) -> Vec:
        origin = about or Vec(0.0, 0.0)
        c, s = math.cos(angle), math.sin(angle)
        d = self - origin
        return Vec(origin.x + d.x * c - d.y * s, origin.y + d.x * s + d.y * c)

    def angle(self) -> float:
        """Direction in (-pi, pi]."""
        return math.atan2(self.y, self.x)

    def angle_to(self, other: Vec) -> float:
        """Signed angle from self to other, in (-pi, pi]."""
        return math.atan2(self.cross(other), self.dot(other))

    def distance(self, other: Vec) -> float:
        return math.hypot(self.x - other.x, self.y - other.y)

    def distance2(self, other: Vec) -> float:
        dx, dy = self.x - other.x, self.y - other.y
        return dx * dx + dy * dy

    def lerp(self, other: Vec, t: float) -> Vec:
        return Vec(self.x + (other.x - self.x) * t, self.y + (other.y - self.y) * t)

    def midpoint(self, other: Vec) -> Vec:
        return self.lerp(other, 0.5)

    def project_onto(self, direction: Vec) -> Vec:
        length2 = direction.norm2()
        if length2 <= EPS * EPS:
            raise GeometryError("cannot project onto a zero vector")
        return direction * (self.dot(direction) / length2)

    def almost_equals(self, other: Vec, eps: float = EPS) -> bool:
        return almost_equal(self.x, other.x, eps) and almost_equal(self.y, other.y, eps)

    def rounded(self, digits: int = 9) -> Vec:
        return Vec(round(self.x, digits) + 0.0, round(self.y, digits) + 0.0)

    @classmethod
    def polar(cls, radius: float, angle: float) -> Vec:
        return cls(radius * math.cos(angle), radius * math.sin(angle))


PointLike = Union[Vec, tuple[float, float], Sequence[float]]


def as_vec(p: PointLike) -> Vec:
    """Accept Vec, (x, y) tuples and two-item lists alike."""
    if isinstance(p, Vec):
        return p
    try:
        x, y = p
    except (TypeError, ValueError):
        raise GeometryError(f"not a point: {p!r}") from None
    return Vec(float(x), float(y))


def as_vecs(points: Iterable[PointLike]) -> list[Vec]:
    return [as_vec(p) for p in points]


def orient(a: Vec, b: Vec, c: Vec) -> float:
    """Twice the signed area of triangle abc: > 0 if a, b, c turn left (CCW), < 0 right, 0 collinear."""
    return (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)


def orientation(a: Vec, b: Vec, c: Vec, eps: float = EPS) -> int:
    """+1 for a left turn, -1 for a right turn, 0 for (nearly) collinear points."""
    value = orient(a, b, c)
    scale = max(1.0, (b - a).norm() * (c - a).norm())
    if abs(value) <= eps * scale:
        return 0
    return 1 if value > 0 else -1


def collinear(a: Vec, b: Vec, c: Vec, eps: float = EPS) -> bool:
    return orientation(a, b, c, eps) == 0


def centroid_of_points(points: Iterable[PointLike]) -> Vec:
    pts = as_vecs(points)
    if not pts:
        raise GeometryError("centroid of no points")
    return Vec(sum(p.x for p in pts) / len(pts), sum(p.y for p in pts) / len(pts))


# --- segments and lines --------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    a: Vec
    b: Vec

    @classmethod
    def of(cls, a: PointLike, b: PointLike) -> Segment:
        return cls(as_vec(a), as_vec(b))

    @property
    def direction(self) -> Vec:
        return self.b - self.a

    def length(self) -> float:
        return self.a.distance(self.b)

    def midpoint(self) -> Vec:
        return self.a.midpoint(self.b)

    def point_at(self, t: float) -> Vec:
        """a at t=0, b at t=1."""
        return self.a.lerp(self.b, t)

    def reversed(self) -> Segment:
        return Segment(self.b, self.a)

    def is_degenerate(self, eps: float = EPS) -> bool:
        return self.length() <= eps

    def bbox(self) -> BBox:
        return BBox.of_points([self.a, self.b])

    def contains(self, p: Vec, eps: float = EPS) -> bool:
        """Whether p lies on the segment (endpoints included)."""
        if not collinear(self.a, self.b, p, eps):
            return False
        return (
            min(self.a.x, self.b.x) - eps <= p.x <= max(self.a.x, self.b.x) + eps
            and min(self.a.y, self.b.y) - eps <= p.y <= max(self.a.y, self.b.y) + eps
        )

    def parameter_of(self, p: Vec) -> float:
        """The t whose point_at(t) is the projection of p onto the segment's line (not clamped)."""
        d = self.direction
        length2 = d.norm2()
        if length2 <= EPS * EPS:
            return 0.0
        return (p - self.a).dot(d) / length2

    def closest_point(self, p: Vec) -> Vec:
        t = min(1.0, max(0.0, self.parameter_of(p)))
        return self.point_at(t)

    def distance_to(self, p: Vec) -> float:
        return self.closest_point(p).distance(p)

    def intersects(self, other: Segment, eps: float = EPS) -> bool:
        """Whether the two closed segments share at least one point (touching counts)."""
        o1 = orientation(self.a, self.b, other.a, eps)
        o2 = orientation(self.a, self.b, other.b, eps)
        o3 = orientation(other.a, other.b, self.a, eps)
        o4 = orientation(other.a, other.b, self.b, eps)
        if o1 != o2 and o3 != o4:
            return True
        return (
            (o1 == 0 and self.contains(other.a, eps))
            or (o2 == 0 and self.contains(other.b, eps))
            or (o3 == 0 and other.contains(self.a, eps))
            or (o4 == 0 and other.contains(self.b, eps))
        )

    def intersection(self, other: Segment, eps: float = EPS) -> Vec | Segment | None:
        """The shared point, the shared sub-segment of overlapping collinear segments, or None."""
        if not self.intersects(other, eps):
            return None
        d1, d2 = self.direction, other.direction
        denom = d1.cross(d2)
        if abs(denom) > eps * max(1.0, d1.norm() * d2.norm()):
            t = (other.a - self.a).cross(d2) / denom
            return self.point_at(t)
        # Collinear and overlapping: clip other's endpoints to self's parameter range.
        if self.is_degenerate(eps):
            return self.a
        ta, tb = self.parameter_of(other.a), self.parameter_of(other.b)
        lo, hi = max(0.0, min(ta, tb)), min(1.0, max(ta, tb))
        start, end = self.point_at(lo), self.point_at(hi)
        return start if start.almost_equals(end, eps) else Segment(start, end)

    def distance_to_segment(self, other: Segment) -> float:
        if self.intersects(other):
            return 0.0
        return min(
            self.distance_to(other.a), self.distance_to(other.b),
            other.distance_to(self.a), other.distance_to(self.b),
        )


@dataclass(frozen=True)
class Line:
    """An infinite line through `point` with direction `direction` (not necessarily unit length)."""

    point: Vec
    direction: Vec

    def __post_init__(self) -> None:
        if self.direction.norm() <= EPS:
            raise GeometryError("a line needs a non-zero direction")

    @classmethod
    def through(cls, a: PointLike, b: PointLike) -> Line:
        pa, pb = as_vec(a), as_vec(b)
        return cls(pa, pb - pa)

    @classmethod
    def from_coefficients(cls, a: float, b: float, c: float) -> Line:
        """The line a*x + b*y = c."""
        if abs(a) <= EPS and abs(b) <= EPS:
            raise GeometryError("a and b cannot both be zero")
        point = Vec(c / a, 0.0) if abs(a) > abs(b) else Vec(0.0, c / b)
        return cls(point, Vec(-b, a))

    def coefficients(self) -> tuple[float, float, float]:
        """(a, b, c) with a*x + b*y = c and (a, b) a unit normal."""
        n = self.direction.perp().normalized()
        return n.x, n.y, n.dot(self.point)

    def signed_distance(self, p: Vec) -> float:
        """Positive on the left of the direction of travel."""
        return self.direction.cross(p - self.point) / self.direction.norm()

    def distance_to(self, p: Vec) -> float:
        return abs(self.signed_distance(p))

    def project(self, p: Vec) -> Vec:
        return self.point + (p - self.point).project_onto(self.direction)

    def reflect(self, p: Vec) -> Vec:
        foot = self.project(p)
        return foot * 2 - p

    def is_parallel(self, other: Line, eps: float = EPS) -> bool:
        d1, d2 = self.direction.normalized(), other.direction.normalized()
        return abs(d1.cross(d2)) <= eps

    def intersection(self, other: Line, eps: float = EPS) -> Vec | None:
        """The crossing point; None for parallel lines (including identical ones)."""
        denom = self.direction.cross(other.direction)
        if abs(denom) <= eps * self.direction.norm() * other.direction.norm():
            return None
        t = (other.point - self.point).cross(other.direction) / denom
        return self.point + self.direction * t

    def perpendicular_through(self, p: Vec) -> Line:
        return Line(p, self.direction.perp())

    def side(self, p: Vec, eps: float = EPS) -> int:
        """+1 left of the line, -1 right, 0 on it."""
        d = self.signed_distance(p)
        return 0 if abs(d) <= eps else (1 if d > 0 else -1)


def perpendicular_bisector(a: Vec, b: Vec) -> Line:
    if a.almost_equals(b):
        raise GeometryError("the bisector of two equal points is undefined")
    return Line(a.midpoint(b), (b - a).perp())


# --- circles -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Circle:
    center: Vec
    radius: float

    def __post_init__(self) -> None:
        if self.radius < 0:
            raise GeometryError("a circle's radius cannot be negative")

    def area(self) -> float:
        return math.pi * self.radius ** 2

    def circumference(self) -> float:
        return 2 * math.pi * self.radius

    def contains(self, p: Vec, eps: float = EPS) -> bool:
        """Inside or on the circle."""
        return self.center.distance(p) <= self.radius + eps

    def on_boundary(self, p: Vec, eps: float = EPS) -> bool:
        return abs(self.center.distance(p) - self.radius) <= eps * max(1.0, self.radius)

    def point_at(self, angle: float) -> Vec:
        return self.center + Vec.polar(self.radius, angle)

    def bbox(self) -> BBox:
        r = self.radius
        return BBox(self.center.x - r, self.center.y - r, self.center.x + r, self.center.y + r)

    def line_intersections(self, line: Line) -> list[Vec]:
        """0, 1 (tangent) or 2 points, ordered along the line's direction."""
        foot = line.project(self.center)
        dist = foot.distance(self.center)
        if dist > self.radius + EPS:
            return []
        half = math.sqrt(max(0.0, self.radius ** 2 - dist ** 2))
        if half <= EPS:
            return [foot]
        step = line.direction.normalized() * half
        return [foot - step, foot + step]

    def segment_intersections(self, segment: Segment) -> list[Vec]:
        if segment.is_degenerate():
            return [segment.a] if self.on_boundary(segment.a) else []
        hits = self.line_intersections(Line(segment.a, segment.direction))
        return [p for p in hits if -EPS <= segment.parameter_of(p) <= 1 + EPS]

    def circle_intersections(self, other: Circle) -> list[Vec]:
        """0, 1 or 2 points; concentric circles return [] (even if identical)."""
        d = self.center.distance(other.center)
        if d <= EPS or d > self.radius + other.radius + EPS or d < abs(self.radius - other.radius) - EPS:
            return []
        a = (self.radius ** 2 - other.radius ** 2 + d ** 2) / (2 * d)
        h = math.sqrt(max(0.0, self.radius ** 2 - a ** 2))
        direction = (other.center - self.center) / d
        base = self.center + direction * a
        if h <= EPS:
            return [base]
        offset = direction.perp() * h
        return [base + offset, base - offset]

    def tangent_points(self, p: Vec) -> list[Vec]:
        """Points where lines through p touch the circle; [] when p is inside."""
        d = self.center.distance(p)
        if d < self.radius - EPS:
            return []
        if abs(d - self.radius) <= EPS:
            return [p]
        angle = math.acos(self.radius / d)
        base = (p - self.center).angle()
        return [self.point_at(base + angle), self.point_at(base - angle)]

    @classmethod
    def through_three(cls, a: PointLike, b: PointLike, c: PointLike) -> Circle:
        """The circumscribed circle of a triangle."""
        pa, pb, pc = as_vec(a), as_vec(b), as_vec(c)
        center = perpendicular_bisector(pa, pb).intersection(perpendicular_bisector(pb, pc))
        if center is None:
            raise GeometryError("the three points are collinear")
        return cls(center, center.distance(pa))

    @classmethod
    def inscribed(cls, a: PointLike, b: PointLike, c: PointLike) -> Circle:
        """The incircle of a triangle."""
        pa, pb, pc = as_vec(a), as_vec(b), as_vec(c)
        la, lb, lc = pb.distance(pc), pa.distance(pc), pa.distance(pb)
        perimeter = la + lb + lc
        area2 = abs(orient(pa, pb, pc))
        if area2 <= EPS:
            raise GeometryError("the three points are collinear")
        center = (pa * la + pb * lb + pc * lc) / perimeter
        return cls(center, area2 / perimeter)


def min_enclosing_circle(points: Iterable[PointLike]) -> Circle:
    """The smallest circle containing every point (Welzl's algorithm, iterative form, expected O(n))."""
    pts = as_vecs(points)
    if not pts:
        raise GeometryError("no points")
    # A fixed shuffle keeps the expected running time and makes results reproducible.
    pts = sorted(pts, key=lambda p: math.sin(p.x * 12.9898 + p.y * 78.233))
    circle = Circle(pts[0], 0.0)
    for i, p in enumerate(pts):
        if circle.contains(p):
            continue
        circle = Circle(p, 0.0)
        for j in range(i):
            q = pts[j]
            if circle.contains(q):
                continue
            circle = Circle(p.midpoint(q), p.distance(q) / 2)
            for k in range(j):
                r = pts[k]
                if circle.contains(r):
                    continue
                try:
                    circle = Circle.through_three(p, q, r)
                except GeometryError:  # collinear: the two farthest apart span the circle
                    far = max([(p, q), (p, r), (q, r)], key=lambda pair: pair[0].distance(pair[1]))
                    circle = Circle(far[0].midpoint(far[1]), far[0].distance(far[1]) / 2)
    return circle


# --- triangles -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Triangle:
    a: Vec
    b: Vec
    c: Vec

    @classmethod
    def of(cls, a: PointLike, b: PointLike, c: PointLike) -> Triangle:
        return cls(as_vec(a), as_vec(b), as_vec(c))

    def signed_area(self) -> float:
        return orient(self.a, self.b, self.c) / 2

    def area(self) -> float:
        return abs(self.signed_area())

    def is_degenerate(self, eps: float = EPS) -> bool:
        return collinear(self.a, self.b, self.c, eps)

    def side_lengths(self) -> tuple[float, float, float]:
        """Lengths opposite a, b and c."""
        return self.b.distance(self.c), self.a.distance(self.c), self.a.distance(self.b)

    def angles(self) -> tuple[float, float, float]:
        """Angles at a, b and c (radians), from the law of cosines."""
        la, lb, lc = self.side_lengths()
        if min(la, lb, lc) <= EPS:
            raise GeometryError("degenerate triangle")

        def corner(opposite: float, s1: float, s2: float) -> float:
            return math.acos(max(-1.0, min(1.0, (s1 * s1 + s2 * s2 - opposite * opposite) / (2 * s1 * s2))))

        return corner(la, lb, lc), corner(lb, la, lc), corner(lc, la, lb)

    def kind(self) -> str:
        """'acute', 'right' or 'obtuse'."""
        largest = max(self.angles())
        if abs(largest - math.pi / 2) <= 1e-9:
            return "right"
        return "obtuse" if largest > math.pi / 2 else "acute"

    def barycentric(self, p: PointLike) -> tuple[float, float, float]:
        """Weights (u, v, w) with p = u*a + v*b + w*c and u + v + w = 1."""
        q = as_vec(p)
        total = orient(self.a, self.b, self.c)
        if abs(total) <= EPS:
            raise GeometryError("degenerate triangle")
        u = orient(q, self.b, self.c) / total
        v = orient(self.a, q, self.c) / total
        return u, v, 1.0 - u - v

    def contains(self, p: PointLike, eps: float = EPS) -> bool:
        return all(w >= -eps for w in self.barycentric(p))

    def centroid(self) -> Vec:
        return (self.a + self.b + self.c) / 3

    def circumcircle(self) -> Circle:
        return Circle.through_three(self.a, self.b, self.c)

    def incircle(self) -> Circle:
        return Circle.inscribed(self.a, self.b, self.c)

    def orthocenter(self) -> Vec:
        """Where the altitudes meet: H = A + B + C - 2 * circumcentre."""
        return self.a + self.b + self.c - self.circumcircle().center * 2

    def to_polygon(self) -> Polygon:
        return Polygon([self.a, self.b, self.c])


# --- bounding boxes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BBox:
    min_x: float
    min_y: float
    max_x: float
    max_y: float

    def __post_init__(self) -> None:
        if self.min_x > self.max_x or self.min_y > self.max_y:
            raise GeometryError(f"inverted bounding box {self}")

    @classmethod
    def of_points(cls, points: Iterable[PointLike]) -> BBox:
        pts = as_vecs(points)
        if not pts:
            raise GeometryError("bounding box of no points")
        return cls(min(p.x for p in pts), min(p.y for p in pts), max(p.x for p in pts), max(p.y for p in pts))

    @property
    def width(self) -> float:
        return self.max_x - self.min_x

    @property
    def height(self) -> float:
        return self.max_y - self.min_y

    def area(self) -> float:
        return self.width * self.height

    def center(self) -> Vec:
        return Vec((self.min_x + self.max_x) / 2, (self.min_y + self.max_y) / 2)

    def corners(self) -> list[Vec]:
        """Counter-clockwise from the bottom-left corner."""
        return [Vec(self.min_x, self.min_y), Vec(self.max_x, self.min_y), Vec(self.max_x, self.max_y), Vec(self.min_x, self.max_y)]

    def contains(self, p: Vec, eps: float = EPS) -> bool:
        return self.min_x - eps <= p.x <= self.max_x + eps and self.min_y - eps <= p.y <= self.max_y + eps

    def contains_box(self, other: BBox) -> bool:
        return self.min_x <= other.min_x and self.min_y <= other.min_y and self.max_x >= other.max_x and self.max_y >= other.max_y

    def intersects(self, other: BBox) -> bool:
        return not (other.min_x > self.max_x or other.max_x < self.min_x or other.min_y > self.max_y or other.max_y < self.min_y)

    def intersection(self, other: BBox) -> BBox | None:
        if not self.intersects(other):
            return None
        return BBox(max(self.min_x, other.min_x), max(self.min_y, other.min_y),
                    min(self.max_x, other.max_x), min(self.max_y, other.max_y))

    def union(self, other: BBox) -> BBox:
        return BBox(min(self.min_x, other.min_x), min(self.min_y, other.min_y),
                    max(self.max_x, other.max_x), max(self.max_y, other.max_y))

    def expanded(self, margin: float) -> BBox:
        return BBox(self.min_x - margin, self.min_y - margin, self.max_x + margin, self.max_y + margin)

    def to_polygon(self) -> Polygon:
        return Polygon(self.corners())


# --- polygons ------------------------------------------------------------------------------------


class Polygon:
    """A simple polygon given by its vertices (no closing repeat). Immutable by convention.

    Orientation is kept as given; `ccw()` returns a counter-clockwise copy. Most measures (area,
    centroid, containment) do not care about orientation.
    """

    __slots__ = ("vertices",)

    def __init__(self, vertices: Iterable[PointLike]) -> None:
        pts = as_vecs(vertices)
        if len(pts) > 1 and pts[0].almost_equals(pts[-1]):
            pts = pts[:-1]  # accept closed rings, as they come from GeoJSON or WKT
        if len(pts) < 3:
            raise GeometryError(f"a polygon needs at least 3 vertices, got {len(pts)}")
        self.vertices: tuple[Vec, ...] = tuple(pts)

    # construction

    @classmethod
    def regular(cls, sides: int, radius: float = 1.0, center: PointLike = (0.0, 0.0), rotation: float = 0.0) -> Polygon:
        """A regular polygon with its first vertex at angle `rotation`, counter-clockwise."""
        if sides < 3:
            raise GeometryError("a regular polygon needs at least 3 sides")
        c = as_vec(center)
        return cls([c + Vec.polar(radius, rotation + 2 * math.pi * i / sides) for i in range(sides)])

    @classmethod
    def rectangle(cls, min_x: float, min_y: float, max_x: float, max_y: float) -> Polygon:
        return BBox(min_x, min_y, max_x, max_y).to_polygon()

    # basic access

    def __len__(self) -> int:
        return len(self.vertices)

    def __iter__(self) -> Iterator[Vec]:
        return iter(self.vertices)

    def __getitem__(self, index: int) -> Vec:
        return self.vertices[index % len(self.vertices)]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Polygon):
            return NotImplemented
        return self.vertices == other.vertices

    def __hash__(self) -> int:
        return hash(self.vertices)

    def __repr__(self) -> str:
        return f"Polygon([{', '.join(f'({p.x:g}, {p.y:g})' for p in self.vertices)}])"

    def edges(self) -> Iterator[Segment]:
        n = len(self.vertices)
        for i in range(n):
            yield Segment(self.vertices[i], self.vertices[(i + 1) % n])

    def bbox(self) -> BBox:
        return BBox.of_points(self.vertices)

    # measures

    def signed_area(self) -> float:
        """Shoelace formula: positive for counter-clockwise vertex order."""
        total = 0.0
        n = len(self.vertices)
        for i in range(n):
            a, b = self.vertices[i], self.vertices[(i + 1) % n]
            total += a.x * b.y - b.x * a.y
        return total / 2

    def area(self) -> float:
        return abs(self.signed_area())

    def perimeter(self) -> float:
        return sum(edge.length() for edge in self.edges())

    def centroid(self) -> Vec:
        """The centre of mass of the polygon's area (not the average of its vertices)."""
        a = self.signed_area()
        if abs(a) <= EPS:
            raise GeometryError("the centroid of a degenerate polygon is undefined")
        cx = cy = 0.0
        n = len(self.vertices)
        for i in range(n):
            p, q = self.vertices[i], self.vertices[(i + 1) % n]
            w = p.x * q.y - q.x * p.y
            cx += (p.x + q.x) * w
            cy += (p.y + q.y) * w
        return Vec(cx / (6 * a), cy / (6 * a))

    def is_ccw(self) -> bool:
        return self.signed_area() > 0

    def ccw(self) -> Polygon:
        return self if self.is_ccw() else Polygon(reversed(self.vertices))

    def cw(self) -> Polygon:
        return Polygon(reversed(self.vertices)) if self.is_ccw() else self

    # shape tests

    def is_convex(self, eps: float = EPS) -> bool:
        """True when every turn goes the same way; collinear vertices are allowed."""
        direction = 0
        n = len(self.vertices)
        for i in range(n):
            turn = orientation(self.vertices[i], self.vertices[(i + 1) % n], self.vertices[(i + 2) % n], eps)
            if turn == 0:
                continue
            if direction == 0:
                direction = turn
            elif turn != direction:
                return False
        return direction != 0

    def is_simple(self, eps: float = EPS) -> bool:
        """No two non-adjacent edges touch, and adjacent edges share only their common vertex."""
        edges = list(self.edges())
        n = len(edges)
        for i in range(n):
            for j in range(i + 1, n):
                adjacent = j == i + 1 or (i == 0 and j == n - 1)
                hit = edges[i].intersection(edges[j], eps)
                if hit is None:
                    continue
                if not adjacent or isinstance(hit, Segment):
                    return False
        return True

    def winding_number(self, p: Vec) -> int:
        """How many times the boundary winds around p counter-clockwise (0 outside a simple polygon)."""
        winding = 0
        n = len(self.vertices)
        for i in range(n):
            a, b = self.vertices[i], self.vertices[(i + 1) % n]
            if a.y <= p.y:
                if b.y > p.y and orient(a, b, p) > 0:
                    winding += 1
            elif b.y <= p.y and orient(a, b, p) < 0:
                winding -= 1
        return winding

    def on_boundary(self, p: Vec, eps: float = EPS) -> bool:
        return any(edge.contains(p, eps) for edge in self.edges())

    def contains(self, p: PointLike, *, boundary: bool = True, eps: float = EPS) -> bool:
        """Whether p is inside; points on an edge count as inside unless boundary=False."""
        q = as_vec(p)
        if self.on_boundary(q, eps):
            return boundary
        inside = False
        n = len(self.vertices)
        for i in range(n):
            a, b = self.vertices[i], self.vertices[(i + 1) % n]
            if (a.y > q.y) != (b.y > q.y):
                x_cross = a.x + (q.y - a.y) * (b.x - a.x) / (b.y - a.y)
                if q.x < x_cross:
                    inside = not inside
        return inside

    def distance_to(self, p: PointLike) -> float:
        """0 inside, else the distance to the nearest edge."""
        q = as_vec(p)
        if self.contains(q):
            return 0.0
        return min(edge.distance_to(q) for edge in self.edges())

    def boundary_distance(self, p: PointLike) -> float:
        q = as_vec(p)
        return min(edge.distance_to(q) for edge in self.edges())

    # transformations

    def translated(self, dx: float, dy: float) -> Polygon:
        offset = Vec(dx, dy)
        return Polygon(p + offset for p in self.vertices)

    def rotated(self, angle: float, about: PointLike | None = None) -> Polygon:
        pivot = as_vec(about) if about is not None else self.centroid()
        return Polygon(p.rotate(angle, pivot) for p in self.vertices)

    def scaled(self, factor: float, about: PointLike | None = None) -> Polygon:
        if factor == 0:
            raise GeometryError("scaling by zero collapses the polygon")
        pivot = as_vec(about) if about is not None else self.centroid()
        return Polygon(pivot + (p - pivot) * factor for p in self.vertices)

    def without_collinear(self, eps: float = EPS) -> Polygon:
        """Drop vertices that lie on the straight line between their neighbours (and repeated vertices)."""
        pts = list(self.vertices)
        changed = True
        while changed and len(pts) > 3:
            changed = False
            for i in range(len(pts)):
                prev, cur, nxt = pts[i - 1], pts[i], pts[(i + 1) % len(pts)]
                if cur.almost_equals(prev, eps) or collinear(prev, cur, nxt, eps):
                    del pts[i]
                    changed = True
                    break
        return Polygon(pts)

    # decomposition and clipping

    def triangulate(self, eps: float = EPS) -> list[tuple[Vec, Vec, Vec]]:
        """Ear clipping: n - 2 counter-clockwise triangles covering a simple polygon. O(n^2)."""
        pts = list(self.ccw().vertices)
        triangles: list[tuple[Vec, Vec, Vec]] = []
        guard = 0
        while len(pts) > 3:
            n = len(pts)
            for i in range(n):
                a, b, c = pts[i - 1], pts[i], pts[(i + 1) % n]
                if orientation(a, b, c, eps) <= 0:
                    continue  # reflex or flat corner: not an ear
                if any(_in_triangle(p, a, b, c, eps) for p in pts if p not in (a, b, c)):
                    continue
                triangles.append((a, b, c))
                del pts[i]
                break
            else:
                # Only flat corners left (collinear runs): drop one and carry on.
                flat = next((i for i in range(n) if orientation(pts[i - 1], pts[i], pts[(i + 1) % n], eps) == 0), None)
                if flat is None:
                    raise GeometryError("polygon is not simple; cannot triangulate")
                del pts[flat]
            guard += 1
            if guard > 10 * len(self.vertices):
                raise GeometryError("triangulation did not converge")
        if orientation(*pts, eps) > 0:
            triangles.append((pts[0], pts[1], pts[2]))
        return triangles

    def clip(self, window: Polygon) -> Polygon | None:
        """The part of this polygon inside the convex polygon `window` (Sutherland-Hodgman); None if empty."""
        if not window.is_convex():
            raise GeometryError("the clip window must be convex")
        output = list(self.vertices)
        clip = window.ccw().vertices
        for i in range(len(clip)):
            edge_a, edge_b = clip[i], clip[(i + 1) % len(clip)]
            edge_line = Line(edge_a, edge_b - edge_a)
            source, output = output, []
            if not source:
                break
            for j in range(len(source)):
                current, previous = source[j], source[j - 1]
                current_in = edge_line.side(current) >= 0
                previous_in = edge_line.side(previous) >= 0
                if current_in:
                    if not previous_in:
                        output.append(_crossing(previous, current, edge_line))
                    output.append(current)
                elif previous_in:
                    output.append(_crossing(previous, current, edge_line))
        cleaned = _dedupe(output)
        if len(cleaned) < 3:
            return None
        result = Polygon(cleaned)
        return result if result.area() > EPS else None

    def intersection_area(self, other: Polygon) -> float:
        """Area shared with a convex polygon."""
        clipped = self.clip(other)
        return clipped.area() if clipped is not None else 0.0


def _crossing(p: Vec, q: Vec, line: Line) -> Vec:
    hit = line.intersection(Line(p, q - p))
    return hit if hit is not None else q


def _dedupe(points: list[Vec], eps: float = EPS) -> list[Vec]:
    out: list[Vec] = []
    for p in points:
        if not out or not p.almost_equals(out[-1], eps):
            out.append(p)
    if len(out) > 1 and out[0].almost_equals(out[-1], eps):
        out.pop()
    return out


def _in_triangle(p: Vec, a: Vec, b: Vec, c: Vec, eps: float = EPS) -> bool:
    """p inside or on the counter-clockwise triangle abc."""
    return orientation(a, b, p, eps) >= 0 and orientation(b, c, p, eps) >= 0 and orientation(c, a, p, eps) >= 0


def triangle_area(a: PointLike, b: PointLike, c: PointLike) -> float:
    return abs(orient(as_vec(a), as_vec(b), as_vec(c))) / 2


class PolygonWithHoles:
    """An outer ring with zero or more holes (as in WKT / GeoJSON polygons)."""

    def __init__(self, outer: Polygon, holes: Iterable[Polygon] = ()) -> None:
        self.outer = outer.ccw()
        self.holes = [hole.cw() for hole in holes]
        for hole in self.holes:
            if not all(outer.contains(v) for v in hole.vertices):
                raise GeometryError("a hole must lie inside the outer ring")

    def area(self) -> float:
        return self.outer.area() - sum(hole.area() for hole in self.holes)

    def perimeter(self) -> float:
        return self.outer.perimeter() + sum(hole.perimeter() for hole in self.holes)

    def contains(self, p: PointLike, *, boundary: bool = True) -> bool:
        q = as_vec(p)
        if not self.outer.contains(q, boundary=boundary):
            return False
        for hole in self.holes:
            if hole.on_boundary(q):
                return boundary
            if hole.contains(q):
                return False
        return True

    def centroid(self) -> Vec:
        total = self.area()
        if total <= EPS:
            raise GeometryError("degenerate polygon")
        c = self.outer.centroid() * self.outer.area()
        for hole in self.holes:
            c = c - hole.centroid() * hole.area()
        return c / total


# --- point sets: hulls, pairs, calipers ----------------------------------------------------------


def convex_hull(points: Iterable[PointLike]) -> list[Vec]:
    """The convex hull in counter-clockwise order, starting from the lowest-leftmost point.

    Andrew's monotone chain, O(n log n). Points that lie on a hull edge are not hull vertices and
    are left out, so a hull is always strictly convex. Fewer than three distinct points, or all
    points on one line, give the distinct extreme points only.
    """
    pts = sorted(set(as_vecs(points)), key=lambda p: (p.x, p.y))
    if len(pts) <= 2:
        return pts

    def half(sequence: Iterable[Vec]) -> list[Vec]:
        chain: list[Vec] = []
        for p in sequence:
            while len(chain) >= 2 and orient(chain[-2], chain[-1], p) < 0:
                chain.pop()
            chain.append(p)
        return chain

    lower = half(pts)
    upper = half(reversed(pts))
    hull = lower[:-1] + upper[:-1]
    if len(hull) == 2 and hull[0] == hull[1]:
        return hull[:1]
    start = min(range(len(hull)), key=lambda i: (hull[i].y, hull[i].x))
    return hull[start:] + hull[:start]


def convex_hull_polygon(points: Iterable[PointLike]) -> Polygon:
    hull = convex_hull(points)
    if len(hull) < 3:
        raise GeometryError("the points are collinear: their hull has no area")
    return Polygon(hull)


def in_convex_polygon(polygon: Sequence[Vec], p: Vec, eps: float = EPS) -> bool:
    """Point-in-convex-polygon in O(log n) by binary search over the fan from vertex 0.

    `polygon` must be strictly convex and counter-clockwise (as returned by `convex_hull`).
    Points on the boundary count as inside.
    """
    n = len(polygon)
    if n < 3:
        raise GeometryError("need a polygon with at least 3 vertices")
    origin = polygon[0]
    if orientation(origin, polygon[1], p, eps) < 0 or orientation(origin, polygon[-1], p, eps) > 0:
        return False
    lo, hi = 1, n - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if orientation(origin, polygon[mid], p, eps) >= 0:
            lo = mid
        else:
            hi = mid
    return orientation(polygon[lo], polygon[hi], p, eps) >= 0


def closest_pair(points: Iterable[PointLike]) -> tuple[Vec, Vec, float]:
    """The two closest points and their distance. Divide and conquer, O(n log n)."""
    pts = sorted(as_vecs(points), key=lambda p: (p.x, p.y))
    if len(pts) < 2:
        raise GeometryError("need at least two points")

    def solve(xs: list[Vec]) -> tuple[float, Vec, Vec, list[Vec]]:
        # Returns the best pair of `xs` and `xs` sorted by y (merge sort on the way back up).
        if len(xs) <= 3:
            best = (math.inf, xs[0], xs[0])
            for i in range(len(xs)):
                for j in range(i + 1, len(xs)):
                    d = xs[i].distance(xs[j])
                    if d < best[0]:
                        best = (d, xs[i], xs[j])
            return best[0], best[1], best[2], sorted(xs, key=lambda p: p.y)
        mid = len(xs) // 2
        split_x = xs[mid].x
        dl, al, bl, left = solve(xs[:mid])
        dr, ar, br, right = solve(xs[mid:])
        best_d, best_a, best_b = (dl, al, bl) if dl <= dr else (dr, ar, br)
        merged: list[Vec] = []
        i = j = 0
        while i < len(left) or j < len(right):
            if j >= len(right) or (i < len(left) and left[i].y <= right[j].y):
                merged.append(left[i])
                i += 1
            else:
                merged.append(right[j])
                j += 1
        strip = [p for p in merged if abs(p.x - split_x) < best_d]
        for i, p in enumerate(strip):
            for q in strip[i + 1:i + 8]:
                if q.y - p.y >= best_d:
                    break
                d = p.distance(q)
                if d < best_d:
                    best_d, best_a, best_b = d, p, q
        return best_d, best_a, best_b, merged

    distance, a, b, _ = solve(pts)
    return a, b, distance


def farthest_pair(points: Iterable[PointLike]) -> tuple[Vec, Vec, float]:
    """The diameter of a point set: rotating calipers over the convex hull, O(n log n)."""
    hull = convex_hull(points)
    if len(hull) < 2:
        raise GeometryError("need at least two distinct points")
    if len(hull) == 2:
        return hull[0], hull[1], hull[0].distance(hull[1])
    n = len(hull)
    best = (0.0, hull[0], hull[0])
    j = 1
    for i in range(n):
        a, b = hull[i], hull[(i + 1) % n]
        while abs(orient(a, b, hull[(j + 1) % n])) > abs(orient(a, b, hull[j])):
            j = (j + 1) % n
        for candidate in (a, b):
            d = candidate.distance(hull[j])
            if d > best[0]:
                best = (d, candidate, hull[j])
    return best[1], best[2], best[0]


@dataclass(frozen=True)
class OrientedRect:
    center: Vec
    width: float
    height: float
    angle: float

    def area(self) -> float:
        return self.width * self.height

    def corners(self) -> list[Vec]:
        u = Vec.polar(1.0, self.angle)
        v = u.perp()
        hw, hh = self.width / 2, self.height / 2
        return [self.center - u * hw - v * hh, self.center + u * hw - v * hh,
                self.center + u * hw + v * hh, self.center - u * hw + v * hh]


def min_area_rect(points: Iterable[PointLike]) -> OrientedRect:
    """The smallest-area rectangle (any rotation) enclosing the points.

    One side of the optimal rectangle is collinear with a hull edge, so it suffices to try each edge
    direction (O(h^2) here, fine for the hull sizes met in practice).
    """
    hull = convex_hull(points)
    if len(hull) < 3:
        raise GeometryError("the points are collinear")
    best: OrientedRect | None = None
    for i in range(len(hull)):
        edge = hull[(i + 1) % len(hull)] - hull[i]
        u = edge.normalized()
        v = u.perp()
        us = [p.dot(u) for p in hull]
        vs = [p.dot(v) for p in hull]
        width, height = max(us) - min(us), max(vs) - min(vs)
        if best is None or width * height < best.area() - EPS:
            center = u * ((max(us) + min(us)) / 2) + v * ((max(vs) + min(vs)) / 2)
            best = OrientedRect(center, width, height, u.angle())
    assert best is not None
    return best


def minkowski_sum(p: Polygon, q: Polygon) -> Polygon:
    """Minkowski sum of two convex polygons (merging their edge sequences by angle), O(n + m)."""
    a = convex_hull(p.vertices)
    b = convex_hull(q.vertices)
    if len(a) < 3 or len(b) < 3:
        raise GeometryError("both polygons must have area")
    result = []
    i = j = 0
    while i < len(a) or j < len(b):
        result.append(a[i % len(a)] + b[j % len(b)])
        edge_a = a[(i + 1) % len(a)] - a[i % len(a)]
        edge_b = b[(j + 1) % len(b)] - b[j % len(b)]
        turn = edge_a.cross(edge_b)
        if j >= len(b) or (i < len(a) and turn > 0):
            i += 1
        elif i >= len(a) or turn < 0:
            j += 1
        else:
            i += 1
            j += 1
    return Polygon(convex_hull(result))


# --- polylines -----------------------------------------------------------------------------------


def polyline_length(points: Sequence[PointLike]) -> float:
    pts = as_vecs(points)
    return sum(a.distance(b) for a, b in zip(pts, pts[1:]))


def point_along(points: Sequence[PointLike], distance: float) -> Vec:
    """The point `distance` along the polyline from its start (clamped to its ends)."""
    pts = as_vecs(points)
    if not pts:
        raise GeometryError("empty polyline")
    if distance <= 0:
        return pts[0]
    travelled = 0.0
    for a, b in zip(pts, pts[1:]):
        step = a.distance(b)
        if travelled + step >= distance and step > 0:
            return a.lerp(b, (distance - travelled) / step)
        travelled += step
    return pts[-1]


def resample(points: Sequence[PointLike], count: int) -> list[Vec]:
    """`count` points evenly spaced along the polyline, both ends included."""
    if count < 2:
        raise GeometryError("resample needs at least 2 points")
    total = polyline_length(points)
    return [point_along(points, total * i / (count - 1)) for i in range(count)]


def simplify_polyline(points: Sequence[PointLike], tolerance: float) -> list[Vec]:
    """Douglas-Peucker: drop points closer than `tolerance` to the simplified line. Ends are kept."""
    pts = as_vecs(points)
    if len(pts) < 3:
        return pts
    keep = [False] * len(pts)
    keep[0] = keep[-1] = True
    stack = [(0, len(pts) - 1)]
    while stack:
        first, last = stack.pop()
        chord = Segment(pts[first], pts[last])
        index, worst = -1, -1.0
        for i in range(first + 1, last):
            d = chord.distance_to(pts[i])
            if d > worst:
                index, worst = i, d
        if worst > tolerance:
            keep[index] = True
            stack.append((first, index))
            stack.append((index, last))
    return [p for p, k in zip(pts, keep) if k]


def simplify_polygon(polygon: Polygon, tolerance: float) -> Polygon:
    """Douglas-Peucker on a ring: split at the vertex farthest from the first, simplify both halves."""
    pts = list(polygon.vertices)
    far = max(range(len(pts)), key=lambda i: pts[0].distance(pts[i]))
    first = simplify_polyline(pts[: far + 1], tolerance)
    second = simplify_polyline(pts[far:] + [pts[0]], tolerance)
    ring = first[:-1] + second[:-1]
    if len(ring) < 3:
        raise GeometryError("tolerance too large: the polygon collapsed")
    return Polygon(ring)


# --- triangulations of point sets ----------------------------------------------------------------


def delaunay(points: Iterable[PointLike]) -> list[tuple[Vec, Vec, Vec]]:
    """Delaunay triangulation (Bowyer-Watson), counter-clockwise triangles. O(n^2) worst case.

    Duplicate points are merged; fewer than three non-collinear points give no triangles.
    """
    pts = list(dict.fromkeys(as_vecs(points)))
    if len(pts) < 3:
        return []
    box = BBox.of_points(pts)
    span = max(box.width, box.height, 1.0) * 20
    c = box.center()
    super_tri = (Vec(c.x - span, c.y - span), Vec(c.x + span, c.y - span), Vec(c.x, c.y + span))
    triangles: list[tuple[Vec, Vec, Vec]] = [super_tri]
    for p in pts:
        bad = [t for t in triangles if _in_circumcircle(p, *t)]
        boundary: dict[frozenset[Vec], tuple[Vec, Vec]] = {}
        for t in bad:
            for edge in ((t[0], t[1]), (t[1], t[2]), (t[2], t[0])):
                key = frozenset(edge)
                if key in boundary:
                    del boundary[key]  # shared by two bad triangles: interior to the hole
                else:
                    boundary[key] = edge
        triangles = [t for t in triangles if t not in bad]
        for a, b in boundary.values():
            tri = (a, b, p) if orient(a, b, p) > 0 else (b, a, p)
            if abs(orient(*tri)) > EPS:
                triangles.append(tri)
    corners = set(super_tri)
    return [t for t in triangles if not corners.intersection(t)]


def _in_circumcircle(p: Vec, a: Vec, b: Vec, c: Vec) -> bool:
    """p strictly inside the circumcircle of the counter-clockwise triangle abc (the classic determinant)."""
    ax, ay = a.x - p.x, a.y - p.y
    bx, by = b.x - p.x, b.y - p.y
    cx, cy = c.x - p.x, c.y - p.y
    det = (ax * ax + ay * ay) * (bx * cy - cx * by) - (bx * bx + by * by) * (ax * cy - cx * ay) \
        + (cx * cx + cy * cy) * (ax * by - bx * ay)
    return det > EPS


def delaunay_edges(points: Iterable[PointLike]) -> set[frozenset[Vec]]:
    edges: set[frozenset[Vec]] = set()
    for a, b, c in delaunay(points):
        edges |= {frozenset((a, b)), frozenset((b, c)), frozenset((c, a))}
    return edges


# --- spatial index -------------------------------------------------------------------------------


class GridIndex:
    """A uniform grid of buckets for fast "what is near here" queries over many items.

    Each item is stored with its bounding box in every cell the box overlaps. Good when items are of
    similar size and the cell size is about the size of a typical query.
    """

    def __init__(self, cell_size: float) -> None:
        if cell_size <= 0:
            raise GeometryError("cell size must be positive")
        self.cell_size = cell_size
        self._cells: dict[tuple[int, int], set[int]] = {}
        self._items: dict[int, tuple[object, BBox]] = {}
        self._next_id = 0

    def _cell_range(self, box: BBox) -> Iterator[tuple[int, int]]:
        s = self.cell_size
        for i in range(math.floor(box.min_x / s), math.floor(box.max_x / s) + 1):
            for j in range(math.floor(box.min_y / s), math.floor(box.max_y / s) + 1):
                yield i, j

    def insert(self, item: object, box: BBox) -> int:
        """Store `item` with bounding box `box`; returns a handle for `remove`."""
        handle = self._next_id
        self._next_id += 1
        self._items[handle] = (item, box)
        for cell in self._cell_range(box):
            self._cells.setdefault(cell, set()).add(handle)
        return handle

    def insert_point(self, item: object, p: PointLike) -> int:
        q = as_vec(p)
        return self.insert(item, BBox(q.x, q.y, q.x, q.y))

    def remove(self, handle: int) -> None:
        try:
            _, box = self._items.pop(handle)
        except KeyError:
            raise GeometryError(f"no item with handle {handle}") from None
        for cell in self._cell_range(box):
            bucket = self._cells.get(cell)
            if bucket is not None:
                bucket.discard(handle)
                if not bucket:
                    del self._cells[cell]

    def __len__(self) -> int:
        return len(self._items)

    def query(self, box: BBox) -> list[object]:
        """Items whose bounding boxes intersect `box`, in insertion order."""
        handles: set[int] = set()
        for cell in self._cell_range(box):
            handles |= self._cells.get(cell, set())
        return [self._items[h][0] for h in sorted(handles) if self._items[h][1].intersects(box)]

    def nearby(self, p: PointLike, radius: float) -> list[object]:
        """Items whose bounding boxes come within `radius` of p."""
        q = as_vec(p)
        hits = self.query(BBox(q.x - radius, q.y - radius, q.x + radius, q.y + radius))
        out = []
        for item in hits:
            box = next(b for i, b in self._items.values() if i is item)
            dx = max(box.min_x - q.x, 0.0, q.x - box.max_x)
            dy = max(box.min_y - q.y, 0.0, q.y - box.max_y)
            if math.hypot(dx, dy) <= radius:
                out.append(item)
        return out

    def nearest(self, p: PointLike, max_radius: float | None = None) -> object | None:
        """The item whose bounding box is closest to p, searching rings of cells outwards."""
        q = as_vec(p)
        if not self._items:
            return None
        limit = max_radius if max_radius is not None else math.inf
        radius = self.cell_size
        while True:
            found = self.nearby(q, min(radius, limit))
            if found:
                def gap(item: object) -> float:
                    box = next(b for i, b in self._items.values() if i is item)
                    return math.hypot(max(box.min_x - q.x, 0.0, q.x - box.max_x), max(box.min_y - q.y, 0.0, q.y - box.max_y))
                return min(found, key=gap)
            if radius >= limit:
                return None
            radius *= 2
            if radius > 1e12:
                return None


# --- affine transforms ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Affine:
    """The affine map (x, y) -> (a*x + b*y + c, d*x + e*y + f).

    Compose with `@`: (t1 @ t2)(p) == t1(t2(p)), i.e. t2 is applied first.
    """

    a: float = 1.0
    b: float = 0.0
    c: float = 0.0
    d: float = 0.0
    e: float = 1.0
    f: float = 0.0

    @classmethod
    def identity(cls) -> Affine:
        return cls()

    @classmethod
    def translation(cls, dx: float, dy: float) -> Affine:
        return cls(c=dx, f=dy)

    @classmethod
    def rotation(cls, angle: float, about: PointLike | None = None) -> Affine:
        cos, sin = math.cos(angle), math.sin(angle)
        rot = cls(cos, -sin, 0.0, sin, cos, 0.0)
        if about is None:
            return rot
        pivot = as_vec(about)
        return cls.translation(pivot.x, pivot.y) @ rot @ cls.translation(-pivot.x, -pivot.y)

    @classmethod
    def scaling(cls, sx: float, sy: float | None = None, about: PointLike | None = None) -> Affine:
        scale = cls(a=sx, e=sx if sy is None else sy)
        if about is None:
            return scale
        pivot = as_vec(about)
        return cls.translation(pivot.x, pivot.y) @ scale @ cls.translation(-pivot.x, -pivot.y)

    @classmethod
    def shear(cls, kx: float = 0.0, ky: float = 0.0) -> Affine:
        return cls(b=kx, d=ky)

    @classmethod
    def reflection(cls, line: Line) -> Affine:
        """Mirror across `line`."""
        u = line.direction.normalized()
        a, b, d, e = 2 * u.x * u.x - 1, 2 * u.x * u.y, 2 * u.x * u.y, 2 * u.y * u.y - 1
        p = line.point
        return cls(a, b, p.x - (a * p.x + b * p.y), d, e, p.y - (d * p.x + e * p.y))

    @classmethod
    def from_points(cls, src: Sequence[PointLike], dst: Sequence[PointLike]) -> Affine:
        """The unique affine map sending three source points onto three destination points."""
        if len(src) != 3 or len(dst) != 3:
            raise GeometryError("need exactly three point pairs")
        s = as_vecs(src)
        t = as_vecs(dst)
        det = orient(s[0], s[1], s[2])
        if abs(det) <= EPS:
            raise GeometryError("source points are collinear")
        # Solve for the map of the basis (s1 - s0, s2 - s0) onto (t1 - t0, t2 - t0).
        u1, u2 = s[1] - s[0], s[2] - s[0]
        v1, v2 = t[1] - t[0], t[2] - t[0]
        inv = cls(u2.y / det, -u2.x / det, 0.0, -u1.y / det, u1.x / det, 0.0)
        linear = cls(v1.x, v2.x, 0.0, v1.y, v2.y, 0.0) @ inv
        offset = t[0] - linear(s[0])
        return cls(linear.a, linear.b, offset.x, linear.d, linear.e, offset.y)

    def __matmul__(self, other: Affine) -> Affine:
        return Affine(
            self.a * other.a + self.b * other.d,
            self.a * other.b + self.b * other.e,
            self.a * other.c + self.b * other.f + self.c,
            self.d * other.a + self.e * other.d,
            self.d * other.b + self.e * other.e,
            self.d * other.c + self.e * other.f + self.f,
        )

    def __call__(self, p: PointLike) -> Vec:
        q = as_vec(p)
        return Vec(self.a * q.x + self.b * q.y + self.c, self.d * q.x + self.e * q.y + self.f)

    def determinant(self) -> float:
        return self.a * self.e - self.b * self.d

    def inverse(self) -> Affine:
        det = self.determinant()
        if abs(det) <= EPS:
            raise GeometryError("the transform is not invertible")
        a, b, d, e = self.e / det, -self.b / det, -self.d / det, self.a / det
        return Affine(a, b, -(a * self.c + b * self.f), d, e, -(d * self.c + e * self.f))

    def preserves_orientation(self) -> bool:
        return self.determinant() > 0

    def apply_polygon(self, polygon: Polygon) -> Polygon:
        return Polygon(self(p) for p in polygon.vertices)

    def apply_all(self, points: Iterable[PointLike]) -> list[Vec]:
        return [self(p) for p in points]

    def almost_equals(self, other: Affine, eps: float = EPS) -> bool:
        mine = (self.a, self.b, self.c, self.d, self.e, self.f)
        theirs = (other.a, other.b, other.c, other.d, other.e, other.f)
        return all(almost_equal(x, y, eps) for x, y in zip(mine, theirs))


# --- angles --------------------------------------------------------------------------------------


def normalize_angle(angle: float) -> float:
    """The same direction in [0, 2*pi)."""
    result = math.fmod(angle, 2 * math.pi)
    return result + 2 * math.pi if result < 0 else result


def angle_between(a: PointLike, vertex: PointLike, b: PointLike) -> float:
    """The unsigned angle a-vertex-b in [0, pi]."""
    v = as_vec(vertex)
    u, w = as_vec(a) - v, as_vec(b) - v
    if u.norm() <= EPS or w.norm() <= EPS:
        raise GeometryError("an angle needs two non-zero arms")
    return abs(u.angle_to(w))


def bearing(a: PointLike, b: PointLike) -> float:
    """Compass bearing from a to b in degrees: 0 = north (+y), 90 = east (+x)."""
    d = as_vec(b) - as_vec(a)
    return math.degrees(math.atan2(d.x, d.y)) % 360.0


def interior_angles(polygon: Polygon) -> list[float]:
    """Interior angle at each vertex, in radians; reflex angles exceed pi."""
    pts = polygon.ccw().vertices
    n = len(pts)
    out = []
    for i in range(n):
        prev, cur, nxt = pts[i - 1], pts[i], pts[(i + 1) % n]
        turn = (cur - prev).angle_to(nxt - cur)
        out.append(math.pi - turn)
    return out


# --- cutting, offsetting, rasterizing ------------------------------------------------------------


def split_polygon(polygon: Polygon, line: Line) -> tuple[Polygon | None, Polygon | None]:
    """Cut a convex polygon by a line: (part on the left, part on the right); a missing part is None."""
    if not polygon.is_convex():
        raise GeometryError("split_polygon needs a convex polygon")
    left: list[Vec] = []
    right: list[Vec] = []
    pts = polygon.vertices
    for i in range(len(pts)):
        cur, nxt = pts[i], pts[(i + 1) % len(pts)]
        side_cur, side_nxt = line.side(cur), line.side(nxt)
        if side_cur >= 0:
            left.append(cur)
        if side_cur <= 0:
            right.append(cur)
        if side_cur * side_nxt < 0:
            hit = _crossing(cur, nxt, line)
            left.append(hit)
            right.append(hit)

    def build(ring: list[Vec]) -> Polygon | None:
        ring = _dedupe(ring)
        if len(ring) < 3:
            return None
        candidate = Polygon(ring)
        return candidate if candidate.area() > EPS else None

    return build(left), build(right)


def offset_convex(polygon: Polygon, distance: float) -> Polygon:
    """Grow (distance > 0) or shrink (< 0) a convex polygon by moving every edge outwards, mitred corners.

    Shrinking past the polygon's inradius makes it vanish: GeometryError.
    """
    if not polygon.is_convex():
        raise GeometryError("offset_convex needs a convex polygon")
    pts = polygon.without_collinear().ccw().vertices
    n = len(pts)
    lines = []
    for i in range(n):
        a, b = pts[i], pts[(i + 1) % n]
        normal = (b - a).perp().normalized() * -1  # outward normal of a CCW polygon
        lines.append(Line(a + normal * distance, b - a))
    corners = []
    for i in range(n):
        hit = lines[i - 1].intersection(lines[i])
        if hit is None:
            raise GeometryError("parallel consecutive edges")
        corners.append(hit)
    for i in range(n):
        # Past the collapse point an edge flips round; a shrunken edge must keep its direction.
        if (corners[(i + 1) % n] - corners[i]).dot(pts[(i + 1) % n] - pts[i]) <= EPS:
            raise GeometryError(f"offset {distance} collapses the polygon")
    return Polygon(corners)


def rasterize(polygon: Polygon, cell: float = 1.0) -> list[tuple[int, int]]:
    """Grid cells (i, j) whose centres ((i + 0.5) * cell, (j + 0.5) * cell) lie inside the polygon.

    A scanline fill: for every row of cell centres, the crossings with the polygon's edges are sorted
    and the cells between pairs of crossings are filled (even-odd rule).
    """
    if cell <= 0:
        raise GeometryError("cell size must be positive")
    box = polygon.bbox()
    cells: list[tuple[int, int]] = []
    pts = polygon.vertices
    n = len(pts)
    for j in range(math.floor(box.min_y / cell), math.ceil(box.max_y / cell) + 1):
        y = (j + 0.5) * cell
        xs = []
        for k in range(n):
            a, b = pts[k], pts[(k + 1) % n]
            if (a.y > y) != (b.y > y):
                xs.append(a.x + (y - a.y) * (b.x - a.x) / (b.y - a.y))
        xs.sort()
        for start, end in zip(xs[0::2], xs[1::2]):
            first = math.ceil(start / cell - 0.5)
            last = math.floor(end / cell - 0.5)
            cells.extend((i, j) for i in range(first, last + 1))
    return cells


# --- WKT and GeoJSON ------------------------------------------------------------------------------

Geometry = Union[Vec, list[Vec], Polygon, PolygonWithHoles]

_WKT_RE = re.compile(r"^\s*(POINT|LINESTRING|POLYGON)\s*(EMPTY|\(.*\))\s*$", re.I | re.S)
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_COORD_RE = re.compile(rf"^\s*({_NUMBER})\s+({_NUMBER})\s*$")


def _fmt(value: float, precision: int) -> str:
    text = f"{value:.{precision}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _coords(points: Iterable[Vec], precision: int) -> str:
    return ", ".join(f"{_fmt(p.x, precision)} {_fmt(p.y, precision)}" for p in points)


def to_wkt(geometry: Geometry, precision: int = 9) -> str:
    """Well-known text. A list of points is a LINESTRING; polygon rings are closed on output."""
    if isinstance(geometry, Vec):
        return f"POINT ({_coords([geometry], precision)})"
    if isinstance(geometry, Polygon):
        ring = list(geometry.vertices) + [geometry.vertices[0]]
        return f"POLYGON (({_coords(ring, precision)}))"
    if isinstance(geometry, PolygonWithHoles):
        rings = [geometry.outer, *geometry.holes]
        body = ", ".join(f"({_coords(list(r.vertices) + [r.vertices[0]], precision)})" for r in rings)
        return f"POLYGON ({body})"
    if isinstance(geometry, list):
        if len(geometry) < 2:
            raise GeometryError("a LINESTRING needs at least two points")
        return f"LINESTRING ({_coords(as_vecs(geometry), precision)})"
    raise GeometryError(f"cannot write {type(geometry).__name__} as WKT")


def _parse_coord_list(text: str) -> list[Vec]:
    points = []
    for chunk in text.split(","):
        match = _COORD_RE.match(chunk)
        if not match:
            raise GeometryError(f"bad WKT coordinate {chunk.strip()!r}")
        points.append(Vec(float(match.group(1)), float(match.group(2))))
    return points


def _split_rings(body: str) -> list[str]:
    """'(a, b), (c, d)' -> ['a, b', 'c, d'], checking parentheses balance."""
    rings = []
    depth = 0
    start = 0
    for i, ch in enumerate(body):
        if ch == "(":
            depth += 1
            if depth == 1:
                start = i + 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                rings.append(body[start:i])
            if depth < 0:
                raise GeometryError("unbalanced parentheses in WKT")
        elif depth == 0 and ch not in ", \t\n":
            raise GeometryError(f"unexpected {ch!r} between WKT rings")
    if depth != 0:
        raise GeometryError("unbalanced parentheses in WKT")
    return rings


def from_wkt(text: str) -> Geometry | None:
    """Parse POINT, LINESTRING and POLYGON (with holes) WKT; 'EMPTY' geometries give None."""
    match = _WKT_RE.match(text)
    if not match:
        raise GeometryError(f"unsupported or malformed WKT: {text[:40]!r}")
    kind, body = match.group(1).upper(), match.group(2)
    if body.upper() == "EMPTY":
        return None
    inner = body.strip()[1:-1]
    if kind == "POINT":
        points = _parse_coord_list(inner)
        if len(points) != 1:
            raise GeometryError("a POINT has exactly one coordinate pair")
        return points[0]
    if kind == "LINESTRING":
        points = _parse_coord_list(inner)
        if len(points) < 2:
            raise GeometryError("a LINESTRING needs at least two points")
        return points
    rings = [_parse_coord_list(ring) for ring in _split_rings(inner)]
    if not rings:
        raise GeometryError("a POLYGON needs at least one ring")
    for ring in rings:
        if len(ring) < 4 or not ring[0].almost_equals(ring[-1]):
            raise GeometryError("POLYGON rings must be closed and have at least 4 points")
    polygons = [Polygon(ring) for ring in rings]
    if len(polygons) == 1:
        return polygons[0]
    return PolygonWithHoles(polygons[0], polygons[1:])


def to_geojson(geometry: Geometry) -> dict:
    """A GeoJSON geometry object (RFC 7946: outer rings counter-clockwise, holes clockwise)."""
    def ring(polygon: Polygon, ccw: bool) -> list[list[float]]:
        oriented = polygon.ccw() if ccw else polygon.cw()
        pts = list(oriented.vertices) + [oriented.vertices[0]]
        return [[p.x, p.y] for p in pts]

    if isinstance(geometry, Vec):
        return {"type": "Point", "coordinates": [geometry.x, geometry.y]}
    if isinstance(geometry, Polygon):
        return {"type": "Polygon", "coordinates": [ring(geometry, True)]}
    if isinstance(geometry, PolygonWithHoles):
        return {"type": "Polygon", "coordinates": [ring(geometry.outer, True), *(ring(h, False) for h in geometry.holes)]}
    if isinstance(geometry, list):
        return {"type": "LineString", "coordinates": [[p.x, p.y] for p in as_vecs(geometry)]}
    raise GeometryError(f"cannot write {type(geometry).__name__} as GeoJSON")


def from_geojson(obj: dict) -> Geometry:
    kind = obj.get("type")
    coords = obj.get("coordinates")
    if coords is None:
        raise GeometryError("GeoJSON geometry without coordinates")
    if kind == "Point":
        return as_vec(coords)
    if kind == "LineString":
        return as_vecs(coords)
    if kind == "Polygon":
        rings = [Polygon(r) for r in coords]
        if not rings:
            raise GeometryError("a Polygon needs at least one ring")
        return rings[0] if len(rings) == 1 else PolygonWithHoles(rings[0], rings[1:])
    raise GeometryError(f"unsupported GeoJSON type {kind!r}")



# --- point-set and curve measures ----------------------------------------------------------------


def voronoi_cells(sites: Iterable[PointLike], bounds: BBox) -> dict[Vec, Polygon]:
    """The Voronoi cell of each site, clipped to `bounds`: the bounding rectangle cut by the
    perpendicular bisector with every other site, keeping the side of the site. O(n^2 * cell size).
    """
    pts = list(dict.fromkeys(as_vecs(sites)))
    cells: dict[Vec, Polygon] = {}
    for site in pts:
        cell: Polygon | None = bounds.to_polygon()
        for other in pts:
            if other == site or cell is None:
                continue
            bisector = perpendicular_bisector(site, other)
            left, right = split_polygon(cell, bisector)
            cell = left if bisector.side(site) > 0 else right
        if cell is not None:
            cells[site] = cell
    return cells


def segment_intersections(segments: Sequence[Segment], eps: float = EPS) -> list[tuple[int, int, Vec | Segment]]:
    """Every intersecting pair (i, j, where), i < j. A grid index keeps distant pairs from being tested."""
    if not segments:
        return []
    lengths = sorted(seg.length() for seg in segments)
    cell = max(lengths[len(lengths) // 2], EPS * 1e3)
    index = GridIndex(cell)
    for i, seg in enumerate(segments):
        index.insert(i, seg.bbox())
    found = []
    for i, seg in enumerate(segments):
        for j in index.query(seg.bbox().expanded(eps)):
            if j <= i:  # type: ignore[operator]
                continue
            hit = seg.intersection(segments[j], eps)  # type: ignore[index]
            if hit is not None:
                found.append((i, j, hit))  # type: ignore[arg-type]
    return sorted(found, key=lambda item: (item[0], item[1]))


def hausdorff_distance(first: Sequence[PointLike], second: Sequence[PointLike]) -> float:
    """The largest distance from a vertex of one polyline to the other polyline (both directions)."""
    a, b = as_vecs(first), as_vecs(second)
    if len(a) < 2 or len(b) < 2:
        raise GeometryError("polylines need at least two points")
    seg_a = [Segment(p, q) for p, q in zip(a, a[1:])]
    seg_b = [Segment(p, q) for p, q in zip(b, b[1:])]
    one_way = max(min(s.distance_to(p) for s in seg_b) for p in a)
    other_way = max(min(s.distance_to(p) for s in seg_a) for p in b)
    return max(one_way, other_way)


def discrete_frechet(first: Sequence[PointLike], second: Sequence[PointLike]) -> float:
    """The discrete Fréchet ("dog leash") distance between two point sequences, O(n*m) dynamic programming."""
    a, b = as_vecs(first), as_vecs(second)
    if not a or not b:
        raise GeometryError("empty sequence")
    previous: list[float] = []
    for i, p in enumerate(a):
        current: list[float] = []
        for j, q in enumerate(b):
            d = p.distance(q)
            if i == 0 and j == 0:
                best = d
            elif i == 0:
                best = max(current[j - 1], d)
            elif j == 0:
                best = max(previous[0], d)
            else:
                best = max(min(previous[j], previous[j - 1], current[j - 1]), d)
            current.append(best)
        previous = current
    return previous[-1]


def snap_to_grid(points: Iterable[PointLike], spacing: float) -> list[Vec]:
    """Round coordinates to multiples of `spacing`, dropping consecutive duplicates that result."""
    if spacing <= 0:
        raise GeometryError("spacing must be positive")
    out: list[Vec] = []
    for p in as_vecs(points):
        snapped = Vec(round(p.x / spacing) * spacing + 0.0, round(p.y / spacing) * spacing + 0.0)
        if not out or out[-1] != snapped:
            out.append(snapped)
    return out


# --- interior points and paths around obstacles --------------------------------------------------


def point_on_surface(polygon: Polygon) -> Vec:
    """A point guaranteed to lie strictly inside the polygon (unlike the centroid of a concave shape).

    Takes the horizontal line through the middle of the bounding box (nudged off any vertex), and
    returns the midpoint of the widest stretch of it that lies inside.
    """
    box = polygon.bbox()
    ys = sorted({v.y for v in polygon.vertices})
    y = (box.min_y + box.max_y) / 2
    if any(almost_equal(y, vy) for vy in ys):
        above = [vy for vy in ys if vy > y]
        y = (y + above[0]) / 2 if above else y
    xs = []
    pts = polygon.vertices
    for i in range(len(pts)):
        a, b = pts[i], pts[(i + 1) % len(pts)]
        if (a.y > y) != (b.y > y):
            xs.append(a.x + (y - a.y) * (b.x - a.x) / (b.y - a.y))
    xs.sort()
    spans = list(zip(xs[0::2], xs[1::2]))
    if not spans:
        raise GeometryError("degenerate polygon has no interior")
    start, end = max(spans, key=lambda span: span[1] - span[0])
    return Vec((start + end) / 2, y)


def pole_of_inaccessibility(polygon: Polygon, precision: float = 1e-3) -> tuple[Vec, float]:
    """The interior point farthest from the boundary (where to put a label), and that distance.

    Grid refinement: evaluate cell centres, keep the cells that could still beat the best point
    (their centre distance plus half their diagonal), split them in four, repeat.
    """
    box = polygon.bbox()
    size = max(box.width, box.height)
    if size <= EPS:
        raise GeometryError("degenerate polygon")

    def score(p: Vec) -> float:
        d = polygon.boundary_distance(p)
        return d if polygon.contains(p) else -d

    best_point = point_on_surface(polygon)
    best = score(best_point)
    half = size / 2
    cells = [Vec(box.min_x + half, box.min_y + half)]
    while half > precision and cells:
        survivors = []
        for centre in cells:
            d = score(centre)
            if d > best:
                best, best_point = d, centre
            if d + half * math.sqrt(2) > best + precision:
                survivors.append(centre)
        half /= 2
        cells = [c + Vec(dx, dy) for c in survivors for dx in (-half, half) for dy in (-half, half)]
        if len(cells) > 20000:  # pathological shapes: keep the most promising cells only
            cells = sorted(cells, key=score, reverse=True)[:20000]
    return best_point, best


def segment_inside(polygon: Polygon, p: Vec, q: Vec, eps: float = EPS) -> bool:
    """Whether the segment pq stays inside the polygon (it may run along the boundary)."""
    if not polygon.contains(p) or not polygon.contains(q) or not polygon.contains(p.midpoint(q)):
        return False
    seg = Segment(p, q)
    for edge in polygon.edges():
        hit = seg.intersection(edge, eps)
        if hit is None or isinstance(hit, Segment):
            continue
        if hit.almost_equals(p, eps) or hit.almost_equals(q, eps):
            continue
        if edge.a.almost_equals(hit, eps) or edge.b.almost_equals(hit, eps):
            # Passing exactly through a vertex: inside as long as points just beyond it stay inside.
            step = (q - p) * 1e-6
            if polygon.contains(hit + step) and polygon.contains(hit - step):
                continue
        return False
    return True


def _blocked(a: Vec, b: Vec, obstacles: Sequence[Polygon]) -> bool:
    """Whether the straight move a -> b passes through the interior of an obstacle."""
    seg = Segment(a, b)
    for obstacle in obstacles:
        if obstacle.contains(a.midpoint(b), boundary=False):
            return True
        for edge in obstacle.edges():
            hit = seg.intersection(edge)
            if hit is None or isinstance(hit, Segment):
                continue
            touching = any(hit.almost_equals(v) for v in (a, b, edge.a, edge.b))
            if not touching:
                return True
    return False


def shortest_path_around(obstacles: Sequence[Polygon], start: PointLike, goal: PointLike) -> tuple[list[Vec], float]:
    """The shortest route from start to goal that does not cross any (polygonal) obstacle.

    Shortest routes bend only at obstacle vertices, so Dijkstra runs on the visibility graph of
    start, goal and all obstacle vertices. O(V^2 * E) to build the graph: meant for modest maps.
    """
    s, g = as_vec(start), as_vec(goal)
    for obstacle in obstacles:
        if obstacle.contains(s, boundary=False) or obstacle.contains(g, boundary=False):
            raise GeometryError("start and goal must lie outside every obstacle")
    nodes = [s, g] + [v for obstacle in obstacles for v in obstacle.vertices]
    dist = {0: 0.0}
    previous: dict[int, int] = {}
    done: set[int] = set()
    while True:
        current = min((i for i in dist if i not in done), key=dist.get, default=None)  # type: ignore[arg-type]
        if current is None:
            raise GeometryError("the goal cannot be reached")
        if current == 1:
            break
        done.add(current)
        for other in range(len(nodes)):
            if other in done or other == current:
                continue
            if _blocked(nodes[current], nodes[other], obstacles):
                continue
            candidate = dist[current] + nodes[current].distance(nodes[other])
            if candidate < dist.get(other, math.inf) - EPS:
                dist[other] = candidate
                previous[other] = current
    path = [1]
    while path[-1] != 0:
        path.append(previous[path[-1]])
    return [nodes[i] for i in reversed(path)], dist[1]
