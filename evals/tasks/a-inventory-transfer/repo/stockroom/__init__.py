from .ledger import (
    CapacityExceeded,
    InsufficientStock,
    Item,
    Ledger,
    LedgerError,
    Location,
    LocationBlocked,
    ReservationError,
    UnknownItem,
    UnknownLocation,
    ValidationError,
)

__all__ = [
    "CapacityExceeded",
    "InsufficientStock",
    "Item",
    "Ledger",
    "LedgerError",
    "Location",
    "LocationBlocked",
    "ReservationError",
    "UnknownItem",
    "UnknownLocation",
    "ValidationError",
]
