from .intervals import (
    Interval,
    covers,
    gaps,
    intersect,
    merge,
    overlapping,
    subtract,
    total_length,
)

__all__ = ["Interval", "covers", "gaps", "intersect", "merge", "overlapping", "subtract", "total_length"]
