"""Summary statistics for the small numeric series shown on dashboards."""


def mean(values):
    """Arithmetic mean; raises ValueError on an empty series."""
    if not values:
        raise ValueError("mean of an empty series")
    return sum(values) / len(values)


def median(values):
    """Middle value; the mean of the two middle values for an even-length series."""
    if not values:
        raise ValueError("median of an empty series")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid] + ordered[mid + 1]) / 2


def spread(values):
    """Difference between the largest and smallest value."""
    return max(values) - min(values) if values else 0
