"""An inventory ledger: items, locations, stock movements, lots, reservations and valuation.

Every change to stock is a Movement appended to the journal; on-hand quantities are derived state kept
in step with the journal, so `rebuild_positions()` can always recompute them from scratch. Quantities are
in each item's base unit (pieces, grams, ...), stored as Decimal so fractional units (kg) stay exact.

    ledger = Ledger()
    ledger.catalogue.add(Item("BOLT-M6", "Hex bolt M6", unit="pc"))
    ledger.locations.add(Location("WH1", "Main warehouse"))
    ledger.locations.add(Location("WH1-A1", "Aisle 1", parent="WH1", capacity=500))
    ledger.receive("BOLT-M6", 200, "WH1-A1", unit_cost="0.12")
    ledger.on_hand("BOLT-M6", "WH1")      # 200, children included

Operations either complete fully or leave the ledger untouched: a failed transfer does not leave stock
taken out of the source, and `apply_batch` rolls back every row if any row fails.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Callable, Iterable, Iterator, Mapping, Sequence

# -- errors -------------------------------------------------------------------------------------------


class LedgerError(Exception):
    """Base class of every error raised by the ledger."""


class ValidationError(LedgerError, ValueError):
    """Bad input: negative quantities, unknown units, malformed rows."""


class UnknownItem(LedgerError, KeyError):
    def __init__(self, sku: str):
        self.sku = sku
        super().__init__(f"unknown item {sku!r}")

    def __str__(self) -> str:
        return self.args[0]


class UnknownLocation(LedgerError, KeyError):
    def __init__(self, code: str):
        self.code = code
        super().__init__(f"unknown location {code!r}")

    def __str__(self) -> str:
        return self.args[0]


class InsufficientStock(LedgerError):
    def __init__(self, sku: str, location: str, wanted: Decimal, available: Decimal):
        self.sku = sku
        self.location = location
        self.wanted = wanted
        self.available = available
        super().__init__(f"{sku} at {location}: wanted {wanted}, only {available} available")


class CapacityExceeded(LedgerError):
    def __init__(self, location: str, capacity: Decimal, would_hold: Decimal):
        self.location = location
        self.capacity = capacity
        self.would_hold = would_hold
        super().__init__(f"{location} holds at most {capacity} units; the move would make it {would_hold}")


class LocationBlocked(LedgerError):
    """Stock cannot enter or leave a location that is blocked (stocktake, quarantine)."""


class ReservationError(LedgerError):
    pass


# -- quantities and units -----------------------------------------------------------------------------


def to_quantity(value, what: str = "quantity") -> Decimal:
    """Decimal from int, str or Decimal; floats are refused so quantities stay exact."""
    if isinstance(value, bool) or isinstance(value, float):
        raise ValidationError(f"{what} must be an int, str or Decimal, not {type(value).__name__}")
    try:
        result = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation:
        raise ValidationError(f"{what} {value!r} is not a number") from None
    if not result.is_finite():
        raise ValidationError(f"{what} must be finite")
    return result


def positive_quantity(value, what: str = "quantity") -> Decimal:
    quantity = to_quantity(value, what)
    if quantity <= 0:
        raise ValidationError(f"{what} must be positive, got {quantity}")
    return quantity


@dataclass(frozen=True)
class UnitOfMeasure:
    """A packaging unit of an item: `factor` base units per one of this unit (a box of 12 has factor 12)."""

    code: str
    factor: Decimal

    def to_base(self, quantity: Decimal) -> Decimal:
        return quantity * self.factor

    def from_base(self, quantity: Decimal) -> Decimal:
        return quantity / self.factor


# -- catalogue ----------------------------------------------------------------------------------------

COST_METHODS = ("fifo", "average")


@dataclass
class Item:
    """A stock-keeping unit.

    unit: the base unit all quantities are kept in. packaging: extra units such as {"box": 12}.
    lot_tracked: receipts must name a lot; issues pick lots first-expiring-first-out.
    reorder_point / reorder_qty: when available stock drops to the point, suggest ordering the qty.
    """

    sku: str
    name: str
    unit: str = "pc"
    packaging: dict[str, Decimal] = field(default_factory=dict)
    lot_tracked: bool = False
    shelf_life_days: int | None = None
    reorder_point: Decimal | None = None
    reorder_qty: Decimal | None = None
    cost_method: str = "fifo"
    active: bool = True
    tags: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if not self.sku or self.sku != self.sku.strip():
            raise ValidationError(f"bad SKU {self.sku!r}")
        if self.cost_method not in COST_METHODS:
            raise ValidationError(f"cost_method must be one of {COST_METHODS}")
        self.packaging = {code: positive_quantity(f, f"factor of {code}") for code, f in self.packaging.items()}
        if self.reorder_point is not None:
            self.reorder_point = to_quantity(self.reorder_point, "reorder_point")
        if self.reorder_qty is not None:
            self.reorder_qty = positive_quantity(self.reorder_qty, "reorder_qty")

    def unit_of(self, code: str | None) -> UnitOfMeasure:
        if code is None or code == self.unit:
            return UnitOfMeasure(self.unit, Decimal(1))
        try:
            return UnitOfMeasure(code, self.packaging[code])
        except KeyError:
            known = [self.unit, *self.packaging]
            raise ValidationError(f"{self.sku} has no unit {code!r}; known units: {known}") from None

    def to_base(self, quantity, unit: str | None = None) -> Decimal:
        return self.unit_of(unit).to_base(to_quantity(quantity))


class Catalogue:
    """All items by SKU."""

    def __init__(self) -> None:
        self._items: dict[str, Item] = {}

    def add(self, item: Item) -> Item:
        if item.sku in self._items:
            raise ValidationError(f"item {item.sku!r} already exists")
        self._items[item.sku] = item
        return item

    def get(self, sku: str) -> Item:
        try:
            return self._items[sku]
        except KeyError:
            raise UnknownItem(sku) from None

    def require_active(self, sku: str) -> Item:
        item = self.get(sku)
        if not item.active:
            raise ValidationError(f"item {sku!r} is discontinued")
        return item

    def deactivate(self, sku: str) -> None:
        self.get(sku).active = False

    def search(self, text: str = "", tag: str | None = None) -> list[Item]:
        """Items whose SKU or name contains `text` (case-insensitive), optionally with a tag."""
        needle = text.lower()
        return [
            item for item in self._items.values()
            if (needle in item.sku.lower() or needle in item.name.lower()) and (tag is None or tag in item.tags)
        ]

    def __contains__(self, sku: str) -> bool:
        return sku in self._items

    def __iter__(self) -> Iterator[Item]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)


# -- locations ----------------------------------------------------------------------------------------

LOCATION_KINDS = ("warehouse", "zone", "bin", "virtual")


@dataclass
class Location:
    """A place stock can be: warehouses contain zones and bins; "virtual" locations (in transit,
    scrap) have no physical capacity.

    capacity: maximum total base units held directly in this location (None = unlimited).
    """

    code: str
    name: str
    parent: str | None = None
    kind: str = "bin"
    capacity: Decimal | None = None
    blocked: bool = False

    def __post_init__(self) -> None:
        if self.kind not in LOCATION_KINDS:
            raise ValidationError(f"location kind must be one of {LOCATION_KINDS}")
        if self.capacity is not None:
            self.capacity = positive_quantity(self.capacity, "capacity")


class LocationTree:
    """Locations by code, with parent/child navigation."""

    def __init__(self) -> None:
        self._locations: dict[str, Location] = {}
        self._children: dict[str, list[str]] = defaultdict(list)

    def add(self, location: Location) -> Location:
        if location.code in self._locations:
            raise ValidationError(f"location {location.code!r} already exists")
        if location.parent is not None and location.parent not in self._locations:
            raise UnknownLocation(location.parent)
        self._locations[location.code] = location
        if location.parent is not None:
            self._children[location.parent].append(location.code)
        return location

    def get(self, code: str) -> Location:
        try:
            return self._locations[code]
        except KeyError:
            raise UnknownLocation(code) from None

    def children(self, code: str) -> list[str]:
        self.get(code)
        return list(self._children.get(code, []))

    def descendants(self, code: str, include_self: bool = True) -> list[str]:
        """`code` and everything below it, depth first."""
        result = [code] if include_self else []
        for child in self.children(code):
            result.extend(self.descendants(child))
        return result

    def path(self, code: str) -> list[str]:
        """Codes from the root down to `code`."""
        chain = []
        current: str | None = code
        while current is not None:
            chain.append(current)
            current = self.get(current).parent
        return list(reversed(chain))

    def warehouse_of(self, code: str) -> str:
        return self.path(code)[0]

    def __contains__(self, code: str) -> bool:
        return code in self._locations

    def __iter__(self) -> Iterator[Location]:
        return iter(self._locations.values())


# -- movements and the journal ------------------------------------------------------------------------

MOVEMENT_KINDS = ("receipt", "issue", "transfer_out", "transfer_in", "adjustment", "reversal")


@dataclass(frozen=True)
class Movement:
    """One signed change of stock at one location (positive = in, negative = out)."""

    id: int
    kind: str
    sku: str
    location: str
    quantity: Decimal
    at: datetime
    lot: str | None = None
    unit_cost: Decimal | None = None
    reference: str | None = None
    transaction: int | None = None
    reverses: int | None = None
    note: str | None = None

    @property
    def is_inbound(self) -> bool:
        return self.quantity > 0


class Journal:
    """Append-only list of movements with lookups by id, SKU and transaction."""

    def __init__(self) -> None:
        self._movements: list[Movement] = []
        self._by_id: dict[int, Movement] = {}
        self._reversed: set[int] = set()

    def append(self, movement: Movement) -> None:
        if movement.id in self._by_id:
            raise LedgerError(f"duplicate movement id {movement.id}")
        self._movements.append(movement)
        self._by_id[movement.id] = movement
        if movement.reverses is not None:
            self._reversed.add(movement.reverses)

    def pop_last(self, movement: Movement) -> None:
        """Remove the most recent movement (rollback of an operation that did not complete)."""
        if not self._movements or self._movements[-1] is not movement:
            raise LedgerError("only the most recent movement can be rolled back")
        self._movements.pop()
        del self._by_id[movement.id]
        if movement.reverses is not None:
            self._reversed.discard(movement.reverses)

    def get(self, movement_id: int) -> Movement:
        try:
            return self._by_id[movement_id]
        except KeyError:
            raise LedgerError(f"no movement with id {movement_id}") from None

    def is_reversed(self, movement_id: int) -> bool:
        return movement_id in self._reversed

    def for_sku(self, sku: str) -> list[Movement]:
        return [m for m in self._movements if m.sku == sku]

    def for_transaction(self, transaction: int) -> list[Movement]:
        return [m for m in self._movements if m.transaction == transaction]

    def between(self, start: datetime, end: datetime) -> list[Movement]:
        return [m for m in self._movements if start <= m.at < end]

    def __iter__(self) -> Iterator[Movement]:
        return iter(self._movements)

    def __len__(self) -> int:
        return len(self._movements)

    def last(self) -> Movement | None:
        return self._movements[-1] if self._movements else None


# -- cost layers --------------------------------------------------------------------------------------


@dataclass
class CostLayer:
    """Units received together at one cost; FIFO consumes the oldest layers first."""

    quantity: Decimal
    unit_cost: Decimal
    received_at: datetime
    movement_id: int


class CostBook:
    """Per-SKU cost layers and running average cost, company-wide (transfers do not change cost)."""

    def __init__(self) -> None:
        self._layers: dict[str, list[CostLayer]] = defaultdict(list)
        self._average: dict[str, Decimal] = {}
        self._units: dict[str, Decimal] = defaultdict(Decimal)

    def add(self, sku: str, quantity: Decimal, unit_cost: Decimal, at: datetime, movement_id: int) -> None:
        self._layers[sku].append(CostLayer(quantity, unit_cost, at, movement_id))
        held = self._units[sku]
        old_average = self._average.get(sku, Decimal(0))
        total = held * old_average + quantity * unit_cost
        self._units[sku] = held + quantity
        self._average[sku] = total / self._units[sku] if self._units[sku] else Decimal(0)

    def consume(self, sku: str, quantity: Decimal, method: str) -> Decimal:
        """Remove `quantity` units and return their cost by `method` ("fifo" or "average")."""
        remaining = quantity
        fifo_cost = Decimal(0)
        layers = self._layers[sku]
        while remaining > 0 and layers:
            layer = layers[0]
            take = min(layer.quantity, remaining)
            fifo_cost += take * layer.unit_cost
            layer.quantity -= take
            remaining -= take
            if layer.quantity == 0:
                layers.pop(0)
        average_cost = quantity * self._average.get(sku, Decimal(0))
        self._units[sku] -= quantity
        if self._units[sku] <= 0:
            self._units[sku] = Decimal(0)
        return fifo_cost if method == "fifo" else average_cost

    def restore(self, sku: str, quantity: Decimal, unit_cost: Decimal, at: datetime, movement_id: int) -> None:
        """Put units back at the front of the queue (used when an issue is reversed)."""
        self._layers[sku].insert(0, CostLayer(quantity, unit_cost, at, movement_id))
        self._units[sku] += quantity

    def remove_layer(self, sku: str, movement_id: int) -> None:
        """Drop the layer created by a receipt (rollback or reversal of that receipt)."""
        layers = self._layers[sku]
        for index, layer in enumerate(layers):
            if layer.movement_id == movement_id:
                self._units[sku] -= layer.quantity
                del layers[index]
                return

    def layers(self, sku: str) -> list[CostLayer]:
        return [replace(layer) for layer in self._layers[sku]]

    def average_cost(self, sku: str) -> Decimal:
        return self._average.get(sku, Decimal(0))

    def value(self, sku: str, method: str) -> Decimal:
        if method == "fifo":
            return sum((l.quantity * l.unit_cost for l in self._layers[sku]), Decimal(0))
        return self._units[sku] * self.average_cost(sku)


# -- lots ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lot:
    code: str
    sku: str
    expires: date | None = None
    received: date | None = None

    def is_expired(self, on: date) -> bool:
        return self.expires is not None and self.expires < on


# -- reservations -------------------------------------------------------------------------------------


@dataclass
class Reservation:
    """Stock promised to an order; reserved units are on hand but not available."""

    order_id: str
    sku: str
    location: str
    quantity: Decimal
    created: datetime
    fulfilled: Decimal = Decimal(0)

    @property
    def open_quantity(self) -> Decimal:
        return self.quantity - self.fulfilled


# -- the ledger ---------------------------------------------------------------------------------------

StockKey = tuple[str, str, str | None]  # (sku, location, lot)


class Ledger:
    """The inventory: catalogue, locations, journal and everything derived from it."""

    def __init__(self, clock: Callable[[], datetime] = datetime.now):
        self.catalogue = Catalogue()
        self.locations = LocationTree()
        self.journal = Journal()
        self.costs = CostBook()
        self.lots: dict[tuple[str, str], Lot] = {}
        self.reservations: dict[str, list[Reservation]] = defaultdict(list)
        self._positions: dict[StockKey, Decimal] = defaultdict(Decimal)
        self._clock = clock
        self._ids = itertools.count(1)
        self._transactions = itertools.count(1)
        self.cogs: dict[str, Decimal] = defaultdict(Decimal)

    # -- positions ---------------------------------------------------------------------------------

    def _held_at(self, location: str) -> Decimal:
        """Total base units (all items) held directly in `location`."""
        return sum((q for (s, loc, _), q in self._positions.items() if loc == location), Decimal(0))

    def quantity_at(self, sku: str, location: str, lot: str | None = None) -> Decimal:
        """On-hand units of `sku` directly in `location` (one lot, or all lots when lot is None)."""
        if lot is not None:
            return self._positions.get((sku, location, lot), Decimal(0))
        return sum((q for (s, loc, _), q in self._positions.items() if s == sku and loc == location),
                   Decimal(0))

    def on_hand(self, sku: str, location: str | None = None, *, include_children: bool = True) -> Decimal:
        """On-hand units of `sku` in `location` (and below it), or everywhere when location is None."""
        self.catalogue.get(sku)
        if location is None:
            return sum((q for (s, _, _), q in self._positions.items() if s == sku), Decimal(0))
        codes = self.locations.descendants(location) if include_children else [self.locations.get(location).code]
        return sum((self.quantity_at(sku, code) for code in codes), Decimal(0))

    def reserved(self, sku: str, location: str | None = None) -> Decimal:
        total = Decimal(0)
        for reservations in self.reservations.values():
            for r in reservations:
                if r.sku == sku and (location is None or r.location in self.locations.descendants(location)):
                    total += r.open_quantity
        return total

    def available(self, sku: str, location: str | None = None) -> Decimal:
        """On hand minus reserved."""
        return self.on_hand(sku, location) - self.reserved(sku, location)

    def positions(self, sku: str | None = None) -> dict[StockKey, Decimal]:
        """Non-zero stock positions, optionally for one SKU."""
        return {k: q for k, q in self._positions.items() if q != 0 and (sku is None or k[0] == sku)}

    # -- posting -----------------------------------------------------------------------------------

    def _new_movement(self, kind: str, sku: str, location: str, quantity: Decimal, **extra) -> Movement:
        return Movement(id=next(self._ids), kind=kind, sku=sku, location=location, quantity=quantity,
                        at=self._clock(), **extra)

    def _check_can_hold(self, movement: Movement) -> None:
        location = self.locations.get(movement.location)
        if location.blocked:
            raise LocationBlocked(f"location {location.code} is blocked")
        if movement.quantity > 0 and location.capacity is not None:
            would_hold = self._held_at(location.code) + movement.quantity
            if would_hold > location.capacity:
                raise CapacityExceeded(location.code, location.capacity, would_hold)
        if movement.quantity < 0:
            have = self.quantity_at(movement.sku, movement.location, movement.lot)
            if have + movement.quantity < 0:
                raise InsufficientStock(movement.sku, movement.location, -movement.quantity, have)

    def _post(self, movement: Movement) -> Movement:
        """Validate a movement against current stock, then record it and update positions."""
        self._check_can_hold(movement)
        self.journal.append(movement)
        self._positions[(movement.sku, movement.location, movement.lot)] += movement.quantity
        return movement

    def _unpost(self, movement: Movement) -> None:
        """Undo the most recent `_post` (not a reversal: the movement disappears from the journal)."""
        self.journal.pop_last(movement)
        self._positions[(movement.sku, movement.location, movement.lot)] -= movement.quantity

    # -- receipts and issues -----------------------------------------------------------------------

    def receive(self, sku: str, quantity, location: str, *, unit_cost="0", unit: str | None = None,
                lot: str | None = None, expires: date | None = None, reference: str | None = None) -> Movement:
        """Goods in: adds stock at `location` and a cost layer at `unit_cost` per base unit."""
        item = self.catalogue.require_active(sku)
        qty = positive_quantity(item.to_base(quantity, unit))
        cost = to_quantity(unit_cost, "unit_cost")
        if cost < 0:
            raise ValidationError("unit_cost must not be negative")
        if unit is not None and unit != item.unit:
            cost = cost / item.unit_of(unit).factor  # the cost was quoted per package
        if item.lot_tracked and lot is None:
            raise ValidationError(f"{sku} is lot-tracked; a lot code is required")
        if lot is not None:
            self._register_lot(item, lot, expires)
        movement = self._post(self._new_movement("receipt", sku, location, qty, lot=lot, unit_cost=cost,
                                                 reference=reference))
        self.costs.add(sku, qty, cost, movement.at, movement.id)
        return movement

    def _register_lot(self, item: Item, code: str, expires: date | None) -> Lot:
        key = (item.sku, code)
        existing = self.lots.get(key)
        if existing is not None:
            if expires is not None and existing.expires not in (None, expires):
                raise ValidationError(f"lot {code} of {item.sku} already has expiry {existing.expires}")
            return existing
        if expires is None and item.shelf_life_days is not None:
            expires = self._clock().date() + timedelta(days=item.shelf_life_days)
        lot = Lot(code, item.sku, expires, self._clock().date())
        self.lots[key] = lot
        return lot

    def _pick_lots(self, sku: str, location: str, quantity: Decimal) -> list[tuple[str | None, Decimal]]:
        """Which lots to take `quantity` from: first expiring first (lots without expiry last)."""
        candidates = [
            (lot, qty) for (s, loc, lot), qty in self._positions.items() if s == sku and loc == location and qty > 0
        ]

        def order(entry):
            lot = entry[0]
            info = self.lots.get((sku, lot)) if lot is not None else None
            expires = info.expires if info is not None and info.expires is not None else date.max
            return (expires, lot or "")

        plan, remaining = [], quantity
        for lot, qty in sorted(candidates, key=order):
            if remaining <= 0:
                break
            take = min(qty, remaining)
            plan.append((lot, take))
            remaining -= take
        if remaining > 0:
            raise InsufficientStock(sku, location, quantity, quantity - remaining)
        return plan

    def issue(self, sku: str, quantity, location: str, *, unit: str | None = None, lot: str | None = None,
              reference: str | None = None, order_id: str | None = None) -> list[Movement]:
        """Goods out. Without `lot`, lots are picked first-expiring-first; returns the movements made.

        With `order_id`, the order's reservation at this location is consumed first so reserved stock
        can be shipped; otherwise only unreserved stock may be issued.
        """
        item = self.catalogue.get(sku)
        qty = positive_quantity(item.to_base(quantity, unit))
        self.locations.get(location)
        reserved_for_order = self._reserved_for(order_id, sku, location) if order_id else Decimal(0)
        free = self.quantity_at(sku, location) - self._reserved_at(sku, location) + reserved_for_order
        if qty > free:
            raise InsufficientStock(sku, location, qty, max(free, Decimal(0)))
        plan = [(lot, qty)] if lot is not None else self._pick_lots(sku, location, qty)
        transaction = next(self._transactions)
        posted: list[Movement] = []
        try:
            for lot_code, take in plan:
                posted.append(self._post(self._new_movement(
                    "issue", sku, location, -take, lot=lot_code, reference=reference, transaction=transaction)))
        except LedgerError:
            for movement in reversed(posted):
                self._unpost(movement)
            raise
        self.cogs[sku] += self.costs.consume(sku, qty, item.cost_method)
        if order_id:
            self._consume_reservation(order_id, sku, location, qty)
        return posted

    # -- transfers ---------------------------------------------------------------------------------

    def transfer(self, sku: str, quantity, source: str, destination: str, *, unit: str | None = None,
                 lot: str | None = None, reference: str | None = None) -> tuple[Movement, Movement]:
        """Move stock between locations as one transaction: a transfer_out and a matching transfer_in.

        Either both movements are recorded or neither is: if the destination refuses the stock (full,
        blocked), the source keeps it and the journal is unchanged.
        """
        item = self.catalogue.get(sku)
        qty = positive_quantity(item.to_base(quantity, unit))
        if source == destination:
            raise ValidationError("source and destination are the same location")
        self.locations.get(source)
        self.locations.get(destination)
        if lot is None and item.lot_tracked:
            raise ValidationError(f"{sku} is lot-tracked; name the lot to transfer")
        free = self.quantity_at(sku, source, lot) - (self._reserved_at(sku, source) if lot is None else 0)
        if qty > free:
            raise InsufficientStock(sku, source, qty, max(free, Decimal(0)))
        transaction = next(self._transactions)
        outbound = self._post(self._new_movement("transfer_out", sku, source, -qty, lot=lot,
                                                 reference=reference, transaction=transaction))
        inbound = self._post(self._new_movement("transfer_in", sku, destination, qty, lot=lot,
                                                reference=reference, transaction=transaction))
        return outbound, inbound

    def move_all(self, source: str, destination: str, reference: str | None = None) -> list[Movement]:
        """Empty `source` into `destination` (every item and lot), e.g. when a bin is retired.

        Stops at the first failure; transfers already made stay made (each transfer is atomic).
        """
        moved: list[Movement] = []
        for (sku, location, lot), qty in sorted(self.positions().items(), key=lambda kv: (kv[0][0], kv[0][2] or "")):
            if location != source or qty <= 0:
                continue
            moved.extend(self.transfer(sku, qty, source, destination, lot=lot, reference=reference))
        return moved

    # -- counts and adjustments --------------------------------------------------------------------

    def adjust(self, sku: str, location: str, counted, *, lot: str | None = None, reason: str = "count") -> Movement | None:
        """Set on-hand at a location (and lot) to a counted quantity; returns the adjustment, if any.

        Gains enter at the current average cost; losses are charged to cost of goods at that cost.
        """
        item = self.catalogue.get(sku)
        count = to_quantity(counted, "counted quantity")
        if count < 0:
            raise ValidationError("a counted quantity cannot be negative")
        current = self.quantity_at(sku, location, lot)
        difference = count - current
        if difference == 0:
            return None
        movement = self._post(self._new_movement("adjustment", sku, location, difference, lot=lot, note=reason,
                                                 unit_cost=self.costs.average_cost(sku)))
        if difference > 0:
            self.costs.add(sku, difference, self.costs.average_cost(sku), movement.at, movement.id)
        else:
            self.cogs[sku] += self.costs.consume(sku, -difference, item.cost_method)
        return movement

    def cycle_count(self, location: str, counts: Mapping[str, object], reason: str = "cycle count") -> list[Movement]:
        """Apply counts for several SKUs in one location; SKUs not listed are left alone."""
        adjustments = []
        for sku, counted in counts.items():
            movement = self.adjust(sku, location, counted, reason=reason)
            if movement is not None:
                adjustments.append(movement)
        return adjustments

    # -- reversals ---------------------------------------------------------------------------------

    def reverse(self, movement_id: int, note: str | None = None) -> list[Movement]:
        """Cancel a posted movement (and its transaction partners) with opposite movements."""
        original = self.journal.get(movement_id)
        if original.kind == "reversal":
            raise LedgerError("a reversal cannot itself be reversed")
        group = self.journal.for_transaction(original.transaction) if original.transaction else [original]
        if any(self.journal.is_reversed(m.id) for m in group):
            raise LedgerError(f"movement {movement_id} was already reversed")
        # Take stock out before putting it back so capacities are checked against the final state.
        ordered = sorted(group, key=lambda m: m.quantity > 0, reverse=True)
        posted: list[Movement] = []
        try:
            for movement in ordered:
                posted.append(self._post(self._new_movement(
                    "reversal", movement.sku, movement.location, -movement.quantity, lot=movement.lot,
                    reverses=movement.id, note=note, unit_cost=movement.unit_cost)))
        except LedgerError:
            for movement in reversed(posted):
                self._unpost(movement)
            raise
        for movement in group:
            if movement.kind == "receipt":
                self.costs.remove_layer(movement.sku, movement.id)
            elif movement.kind == "issue":
                cost = self.costs.average_cost(movement.sku)
                self.costs.restore(movement.sku, -movement.quantity, cost, movement.at, movement.id)
                self.cogs[movement.sku] -= -movement.quantity * cost
        return posted

    # -- reservations ------------------------------------------------------------------------------

    def _reserved_at(self, sku: str, location: str) -> Decimal:
        return sum((r.open_quantity for rs in self.reservations.values() for r in rs
                    if r.sku == sku and r.location == location), Decimal(0))

    def _reserved_for(self, order_id: str, sku: str, location: str) -> Decimal:
        return sum((r.open_quantity for r in self.reservations.get(order_id, [])
                    if r.sku == sku and r.location == location), Decimal(0))

    def reserve(self, order_id: str, sku: str, quantity, location: str, unit: str | None = None) -> Reservation:
        """Hold stock for an order; fails if not enough unreserved stock is on hand there."""
        item = self.catalogue.require_active(sku)
        qty = positive_quantity(item.to_base(quantity, unit))
        free = self.quantity_at(sku, location) - self._reserved_at(sku, location)
        if qty > free:
            raise ReservationError(f"cannot reserve {qty} {sku} at {location}: only {free} unreserved")
        reservation = Reservation(order_id, sku, location, qty, self._clock())
        self.reservations[order_id].append(reservation)
        return reservation

    def release(self, order_id: str) -> Decimal:
        """Cancel an order's open reservations; returns the quantity released."""
        reservations = self.reservations.pop(order_id, [])
        return sum((r.open_quantity for r in reservations), Decimal(0))

    def _consume_reservation(self, order_id: str, sku: str, location: str, quantity: Decimal) -> None:
        remaining = quantity
        for reservation in self.reservations.get(order_id, []):
            if reservation.sku != sku or reservation.location != location or remaining <= 0:
                continue
            take = min(reservation.open_quantity, remaining)
            reservation.fulfilled += take
            remaining -= take
        open_ones = [r for r in self.reservations.get(order_id, []) if r.open_quantity > 0]
        if open_ones:
            self.reservations[order_id] = open_ones
        else:
            self.reservations.pop(order_id, None)

    def expire_reservations(self, older_than: timedelta) -> list[str]:
        """Release reservations older than `older_than`; returns the affected order ids."""
        cutoff = self._clock() - older_than
        stale = [order for order, rs in self.reservations.items() if rs and max(r.created for r in rs) < cutoff]
        for order in stale:
            self.release(order)
        return stale

    # -- locations ---------------------------------------------------------------------------------

    def block(self, location: str) -> None:
        self.locations.get(location).blocked = True

    def unblock(self, location: str) -> None:
        self.locations.get(location).blocked = False

    def free_capacity(self, location: str) -> Decimal | None:
        """Units that still fit directly in `location`, or None when it is unlimited."""
        loc = self.locations.get(location)
        if loc.capacity is None:
            return None
        return loc.capacity - self._held_at(location)

    def suggest_putaway(self, sku: str, quantity, within: str) -> list[tuple[str, Decimal]]:
        """Where to put `quantity` of `sku` inside `within`: bins already holding the item first,
        then the emptiest bins; blocked and virtual locations are skipped."""
        qty = positive_quantity(quantity)
        bins = [self.locations.get(code) for code in self.locations.descendants(within)]
        bins = [b for b in bins if b.kind == "bin" and not b.blocked]

        def preference(location: Location):
            holds_item = self.quantity_at(sku, location.code) > 0
            free = self.free_capacity(location.code)
            return (not holds_item, -(free if free is not None else Decimal("Infinity")), location.code)

        plan, remaining = [], qty
        for location in sorted(bins, key=preference):
            free = self.free_capacity(location.code)
            room = remaining if free is None else min(free, remaining)
            if room <= 0:
                continue
            plan.append((location.code, room))
            remaining -= room
            if remaining == 0:
                break
        if remaining > 0:
            raise CapacityExceeded(within, qty - remaining, qty)
        return plan

    # -- lots --------------------------------------------------------------------------------------

    def lots_of(self, sku: str, location: str | None = None) -> list[tuple[Lot, Decimal]]:
        """Lots of `sku` on hand (optionally in one location and below), soonest expiry first."""
        codes = set(self.locations.descendants(location)) if location else None
        totals: dict[str, Decimal] = defaultdict(Decimal)
        for (s, loc, lot), qty in self._positions.items():
            if s == sku and lot is not None and qty > 0 and (codes is None or loc in codes):
                totals[lot] += qty
        result = [(self.lots[(sku, lot)], qty) for lot, qty in totals.items()]
        return sorted(result, key=lambda pair: (pair[0].expires or date.max, pair[0].code))

    def expiring(self, within_days: int, on: date | None = None) -> list[tuple[Lot, Decimal]]:
        """Lots with stock that expire within `within_days` of `on` (today by default)."""
        today = on or self._clock().date()
        limit = today + timedelta(days=within_days)
        found = []
        for item in self.catalogue:
            for lot, qty in self.lots_of(item.sku):
                if lot.expires is not None and lot.expires <= limit:
                    found.append((lot, qty))
        return sorted(found, key=lambda pair: pair[0].expires)

    def scrap_expired(self, scrap_location: str, on: date | None = None) -> list[Movement]:
        """Transfer every expired lot to the scrap location."""
        today = on or self._clock().date()
        moved = []
        for (sku, location, lot), qty in list(self.positions().items()):
            if lot is None or qty <= 0 or location == scrap_location:
                continue
            info = self.lots.get((sku, lot))
            if info is not None and info.is_expired(today):
                moved.extend(self.transfer(sku, qty, location, scrap_location, lot=lot, reference="expired"))
        return moved

    # -- valuation and replenishment ---------------------------------------------------------------

    def valuation(self, method: str | None = None) -> dict[str, Decimal]:
        """Stock value per SKU, by each item's own cost method unless `method` overrides it."""
        result = {}
        for item in self.catalogue:
            value = self.costs.value(item.sku, method or item.cost_method)
            if value:
                result[item.sku] = value
        return result

    def total_value(self, method: str | None = None) -> Decimal:
        return sum(self.valuation(method).values(), Decimal(0))

    def reorder_suggestions(self) -> list[tuple[str, Decimal, Decimal]]:
        """(sku, available, suggested order quantity) for active items at or below their reorder point."""
        suggestions = []
        for item in self.catalogue:
            if not item.active or item.reorder_point is None:
                continue
            available = self.available(item.sku)
            if available <= item.reorder_point:
                quantity = item.reorder_qty or (item.reorder_point - available + 1)
                suggestions.append((item.sku, available, quantity))
        return suggestions

    def turnover(self, sku: str, start: datetime, end: datetime) -> Decimal | None:
        """Units issued in the period divided by average on-hand at its start and end (None if no stock)."""
        issued = sum((-m.quantity for m in self.journal.between(start, end) if m.sku == sku and m.kind == "issue"),
                     Decimal(0))
        opening = self.on_hand_at(sku, start)
        closing = self.on_hand_at(sku, end)
        average = (opening + closing) / 2
        return issued / average if average else None

    # -- history -----------------------------------------------------------------------------------

    def on_hand_at(self, sku: str, moment: datetime, location: str | None = None) -> Decimal:
        """On-hand as it was at `moment`, replayed from the journal."""
        codes = set(self.locations.descendants(location)) if location else None
        return sum((m.quantity for m in self.journal
                    if m.sku == sku and m.at < moment and (codes is None or m.location in codes)), Decimal(0))

    def history(self, sku: str, location: str | None = None) -> list[tuple[Movement, Decimal]]:
        """Movements of `sku` with the running balance after each one."""
        codes = set(self.locations.descendants(location)) if location else None
        balance = Decimal(0)
        rows = []
        for movement in self.journal.for_sku(sku):
            if codes is not None and movement.location not in codes:
                continue
            balance += movement.quantity
            rows.append((movement, balance))
        return rows

    def rebuild_positions(self) -> None:
        """Recompute every position from the journal (after import or to audit derived state)."""
        positions: dict[StockKey, Decimal] = defaultdict(Decimal)
        for movement in self.journal:
            positions[(movement.sku, movement.location, movement.lot)] += movement.quantity
        self._positions = positions

    def audit(self) -> list[str]:
        """Problems found by checking derived state against the journal; empty when consistent."""
        problems = []
        replayed: dict[StockKey, Decimal] = defaultdict(Decimal)
        for movement in self.journal:
            replayed[(movement.sku, movement.location, movement.lot)] += movement.quantity
        for key in set(replayed) | set(self._positions):
            if replayed.get(key, Decimal(0)) != self._positions.get(key, Decimal(0)):
                problems.append(f"position {key}: journal says {replayed.get(key, 0)}, "
                                f"ledger holds {self._positions.get(key, 0)}")
            if replayed.get(key, Decimal(0)) < 0:
                problems.append(f"position {key} is negative")
        for transaction in {m.transaction for m in self.journal if m.transaction is not None}:
            group = self.journal.for_transaction(transaction)
            kinds = {m.kind for m in group}
            if "transfer_out" in kinds and sum((m.quantity for m in group), Decimal(0)) != 0:
                problems.append(f"transfer transaction {transaction} does not balance")
        return sorted(problems)

    # -- snapshots ---------------------------------------------------------------------------------

    def _snapshot(self) -> dict:
        import copy

        return copy.deepcopy({
            "journal": self.journal, "costs": self.costs, "lots": self.lots, "reservations": self.reservations,
            "positions": self._positions, "cogs": self.cogs,
        })

    def _restore(self, snapshot: dict) -> None:
        self.journal = snapshot["journal"]
        self.costs = snapshot["costs"]
        self.lots = snapshot["lots"]
        self.reservations = snapshot["reservations"]
        self._positions = snapshot["positions"]
        self.cogs = snapshot["cogs"]

    # -- batch import ------------------------------------------------------------------------------

    def apply_batch(self, rows: Iterable[Mapping[str, str]]) -> int:
        """Apply movement rows (dicts with an "action" column) all-or-nothing; returns rows applied.

        Actions: receive (sku, qty, location, unit_cost?, lot?, expires?), issue (sku, qty, location),
        transfer (sku, qty, from, to, lot?), count (sku, location, qty). A failing row raises a
        ValidationError naming the row number, and no row of the batch takes effect.
        """
        snapshot = self._snapshot()
        count = 0
        try:
            for number, row in enumerate(rows, start=1):
                try:
                    self._apply_row(row)
                except (LedgerError, KeyError) as exc:
                    raise ValidationError(f"row {number}: {exc}") from exc
                count += 1
        except Exception:
            self._restore(snapshot)
            raise
        return count

    def _apply_row(self, row: Mapping[str, str]) -> None:
        action = (row.get("action") or "").strip().lower()
        lot = row.get("lot") or None
        if action == "receive":
            expires = date.fromisoformat(row["expires"]) if row.get("expires") else None
            self.receive(row["sku"], row["qty"], row["location"], unit_cost=row.get("unit_cost") or "0",
                         lot=lot, expires=expires, reference=row.get("reference") or None)
        elif action == "issue":
            self.issue(row["sku"], row["qty"], row["location"], lot=lot, reference=row.get("reference") or None)
        elif action == "transfer":
            self.transfer(row["sku"], row["qty"], row["from"], row["to"], lot=lot,
                          reference=row.get("reference") or None)
        elif action == "count":
            self.adjust(row["sku"], row["location"], row["qty"], lot=lot)
        else:
            raise ValidationError(f"unknown action {action!r}")

    def import_csv(self, text: str) -> int:
        """apply_batch over CSV text with a header row."""
        return self.apply_batch(csv.DictReader(io.StringIO(text)))


# -- reports ------------------------------------------------------------------------------------------


def stock_report(ledger: Ledger, location: str | None = None) -> list[dict[str, object]]:
    """One row per SKU with stock: on hand, reserved, available, value and reorder flag."""
    rows = []
    for item in sorted(ledger.catalogue, key=lambda i: i.sku):
        on_hand = ledger.on_hand(item.sku, location)
        if on_hand == 0 and not ledger.reserved(item.sku, location):
            continue
        reserved = ledger.reserved(item.sku, location)
        rows.append({
            "sku": item.sku,
            "name": item.name,
            "unit": item.unit,
            "on_hand": on_hand,
            "reserved": reserved,
            "available": on_hand - reserved,
            "value": ledger.costs.value(item.sku, item.cost_method) if location is None else None,
            "reorder": item.reorder_point is not None and on_hand - reserved <= item.reorder_point,
        })
    return rows


def movement_summary(ledger: Ledger, start: datetime, end: datetime) -> dict[str, dict[str, Decimal]]:
    """Per SKU, total quantity by movement kind in [start, end)."""
    summary: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for movement in ledger.journal.between(start, end):
        summary[movement.sku][movement.kind] += movement.quantity
    return {sku: dict(kinds) for sku, kinds in summary.items()}


def aging_report(ledger: Ledger, buckets: Sequence[int] = (30, 60, 90), on: date | None = None) -> dict[str, list[Decimal]]:
    """Per SKU, units held in FIFO layers by age: [<= 30 days, <= 60, <= 90, older]."""
    today = on or ledger._clock().date()
    report = {}
    for item in ledger.catalogue:
        counts = [Decimal(0)] * (len(buckets) + 1)
        for layer in ledger.costs.layers(item.sku):
            age = (today - layer.received_at.date()).days
            index = next((i for i, limit in enumerate(buckets) if age <= limit), len(buckets))
            counts[index] += layer.quantity
        if any(counts):
            report[item.sku] = counts
    return report


def export_journal_csv(ledger: Ledger) -> str:
    """The journal as CSV for auditors."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", "at", "kind", "sku", "location", "lot", "quantity", "unit_cost", "reference",
                     "transaction", "reverses"])
    for m in ledger.journal:
        writer.writerow([m.id, m.at.isoformat(timespec="seconds"), m.kind, m.sku, m.location, m.lot or "",
                         m.quantity, "" if m.unit_cost is None else m.unit_cost, m.reference or "",
                         m.transaction or "", m.reverses or ""])
    return buffer.getvalue()


# -- purchase orders ----------------------------------------------------------------------------------

PO_STATUSES = ("open", "partial", "received", "closed", "cancelled")


@dataclass
class PurchaseLine:
    sku: str
    ordered: Decimal
    unit_cost: Decimal
    received: Decimal = Decimal(0)

    @property
    def outstanding(self) -> Decimal:
        return max(self.ordered - self.received, Decimal(0))


@dataclass
class PurchaseOrder:
    """Goods ordered from a supplier, received in one or more deliveries."""

    number: str
    supplier: str
    lines: list[PurchaseLine]
    destination: str
    status: str = "open"
    created: datetime | None = None

    def line_for(self, sku: str) -> PurchaseLine:
        for line in self.lines:
            if line.sku == sku:
                return line
        raise ValidationError(f"purchase order {self.number} has no line for {sku}")

    @property
    def total_cost(self) -> Decimal:
        return sum((line.ordered * line.unit_cost for line in self.lines), Decimal(0))


class Purchasing:
    """Purchase orders against a ledger: receipts post stock at the order's unit cost.

    `over_receipt_tolerance` is the fraction a delivery may exceed the ordered quantity (0.05 = 5 %).
    """

    def __init__(self, ledger: Ledger, over_receipt_tolerance: Decimal | str = "0"):
        self.ledger = ledger
        self.tolerance = to_quantity(over_receipt_tolerance, "over_receipt_tolerance")
        self.orders: dict[str, PurchaseOrder] = {}

    def create(self, number: str, supplier: str, destination: str,
               lines: Iterable[tuple[str, object, object]]) -> PurchaseOrder:
        """New order from (sku, quantity, unit_cost) lines."""
        if number in self.orders:
            raise ValidationError(f"purchase order {number} already exists")
        self.ledger.locations.get(destination)
        po_lines = []
        for sku, quantity, unit_cost in lines:
            self.ledger.catalogue.require_active(sku)
            po_lines.append(PurchaseLine(sku, positive_quantity(quantity), to_quantity(unit_cost, "unit_cost")))
        if not po_lines:
            raise ValidationError("a purchase order needs at least one line")
        order = PurchaseOrder(number, supplier, po_lines, destination, created=self.ledger._clock())
        self.orders[number] = order
        return order

    def get(self, number: str) -> PurchaseOrder:
        try:
            return self.orders[number]
        except KeyError:
            raise LedgerError(f"no purchase order {number}") from None

    def receive(self, number: str, delivered: Mapping[str, object], *, location: str | None = None,
                lots: Mapping[str, str] | None = None) -> list[Movement]:
        """Book a delivery against the order; every line is checked before any stock is posted."""
        order = self.get(number)
        if order.status in ("closed", "cancelled", "received"):
            raise LedgerError(f"purchase order {number} is {order.status}")
        plan = []
        for sku, quantity in delivered.items():
            line = order.line_for(sku)
            qty = positive_quantity(quantity)
            limit = line.ordered * (1 + self.tolerance) - line.received
            if qty > limit:
                raise ValidationError(f"{sku}: delivering {qty} exceeds the outstanding {line.outstanding} "
                                      f"(tolerance {self.tolerance:%})")
            plan.append((line, qty))
        target = location or order.destination
        snapshot = self.ledger._snapshot()
        movements = []
        try:
            for line, qty in plan:
                movements.append(self.ledger.receive(line.sku, qty, target, unit_cost=line.unit_cost,
                                                     lot=(lots or {}).get(line.sku), reference=number))
        except LedgerError:
            self.ledger._restore(snapshot)
            raise
        for line, qty in plan:
            line.received += qty
        order.status = "received" if all(l.outstanding == 0 for l in order.lines) else "partial"
        return movements

    def close(self, number: str) -> PurchaseOrder:
        """Close a partially received order; what is still outstanding will not be delivered."""
        order = self.get(number)
        if order.status == "cancelled":
            raise LedgerError(f"purchase order {number} is cancelled")
        order.status = "closed"
        return order

    def cancel(self, number: str) -> PurchaseOrder:
        order = self.get(number)
        if any(line.received for line in order.lines):
            raise LedgerError(f"purchase order {number} has receipts; close it instead")
        order.status = "cancelled"
        return order

    def outstanding(self, sku: str) -> Decimal:
        """Units of `sku` on order and not yet received (open and partial orders)."""
        return sum((line.outstanding for order in self.orders.values() if order.status in ("open", "partial")
                    for line in order.lines if line.sku == sku), Decimal(0))


# -- sales orders and picking -------------------------------------------------------------------------


@dataclass(frozen=True)
class PickLine:
    sku: str
    location: str
    lot: str | None
    quantity: Decimal


class Fulfilment:
    """Allocate customer orders to stock, produce pick lists in walking order, and ship."""

    def __init__(self, ledger: Ledger):
        self.ledger = ledger
        self.orders: dict[str, dict[str, Decimal]] = {}

    def allocate(self, order_id: str, lines: Mapping[str, object], warehouse: str) -> list[Reservation]:
        """Reserve every line inside `warehouse`, fullest bins first so bins empty out; all or nothing."""
        if order_id in self.orders:
            raise ReservationError(f"order {order_id} is already allocated")
        wanted = {sku: positive_quantity(qty) for sku, qty in lines.items()}
        made: list[Reservation] = []
        try:
            for sku, qty in wanted.items():
                remaining = qty
                bins = [code for code in self.ledger.locations.descendants(warehouse)
                        if self.ledger.quantity_at(sku, code) > 0]
                bins.sort(key=lambda code: (-(self.ledger.quantity_at(sku, code)
                                              - self.ledger._reserved_at(sku, code)), code))
                for code in bins:
                    free = self.ledger.quantity_at(sku, code) - self.ledger._reserved_at(sku, code)
                    if free <= 0:
                        continue
                    take = min(free, remaining)
                    made.append(self.ledger.reserve(order_id, sku, take, code))
                    remaining -= take
                    if remaining == 0:
                        break
                if remaining > 0:
                    raise ReservationError(f"order {order_id}: short {remaining} of {sku} in {warehouse}")
        except LedgerError:
            self.ledger.release(order_id)
            raise
        self.orders[order_id] = wanted
        return made

    def pick_list(self, order_id: str) -> list[PickLine]:
        """What to pick where, sorted by location path so a picker walks each aisle once."""
        lines = []
        for reservation in self.ledger.reservations.get(order_id, []):
            remaining = reservation.open_quantity
            for lot, qty in self.ledger._pick_lots(reservation.sku, reservation.location, remaining):
                lines.append(PickLine(reservation.sku, reservation.location, lot, qty))
        return sorted(lines, key=lambda l: (self.ledger.locations.path(l.location), l.sku, l.lot or ""))

    def ship(self, order_id: str, reference: str | None = None) -> list[Movement]:
        """Issue everything reserved for the order; the reservations are consumed."""
        if order_id not in self.orders:
            raise ReservationError(f"order {order_id} is not allocated")
        movements = []
        for line in self.pick_list(order_id):
            movements.extend(self.ledger.issue(line.sku, line.quantity, line.location, lot=line.lot,
                                               reference=reference or order_id, order_id=order_id))
        del self.orders[order_id]
        return movements

    def cancel(self, order_id: str) -> Decimal:
        self.orders.pop(order_id, None)
        return self.ledger.release(order_id)


# -- kits ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BillOfMaterials:
    """Components (sku -> quantity per kit) that make one unit of `kit_sku`."""

    kit_sku: str
    components: Mapping[str, Decimal]

    def requirements(self, kits: Decimal) -> dict[str, Decimal]:
        return {sku: qty * kits for sku, qty in self.components.items()}


class Assembly:
    """Build kits from components (and take them apart again) at one location."""

    def __init__(self, ledger: Ledger):
        self.ledger = ledger
        self.boms: dict[str, BillOfMaterials] = {}

    def define(self, kit_sku: str, components: Mapping[str, object]) -> BillOfMaterials:
        self.ledger.catalogue.get(kit_sku)
        parts = {}
        for sku, qty in components.items():
            self.ledger.catalogue.get(sku)
            if sku == kit_sku:
                raise ValidationError("a kit cannot contain itself")
            parts[sku] = positive_quantity(qty)
        bom = BillOfMaterials(kit_sku, parts)
        self.boms[kit_sku] = bom
        return bom

    def buildable(self, kit_sku: str, location: str) -> Decimal:
        """How many whole kits the components available at `location` allow."""
        bom = self._bom(kit_sku)
        counts = [self.ledger.quantity_at(sku, location) // qty for sku, qty in bom.components.items()]
        return min(counts) if counts else Decimal(0)

    def _bom(self, kit_sku: str) -> BillOfMaterials:
        try:
            return self.boms[kit_sku]
        except KeyError:
            raise ValidationError(f"no bill of materials for {kit_sku}") from None

    def assemble(self, kit_sku: str, kits, location: str) -> list[Movement]:
        """Consume components and receive kits at the summed component cost; all or nothing."""
        count = positive_quantity(kits)
        bom = self._bom(kit_sku)
        snapshot = self.ledger._snapshot()
        movements: list[Movement] = []
        try:
            cost_before = dict(self.ledger.cogs)
            for sku, qty in bom.requirements(count).items():
                movements.extend(self.ledger.issue(sku, qty, location, reference=f"assemble {kit_sku}"))
            consumed = sum((self.ledger.cogs[s] - cost_before.get(s, Decimal(0)) for s in bom.components),
                           Decimal(0))
            for sku in bom.components:
                self.ledger.cogs[sku] = cost_before.get(sku, Decimal(0))
            movements.append(self.ledger.receive(kit_sku, count, location, unit_cost=consumed / count,
                                                 reference="assembly"))
        except LedgerError:
            self.ledger._restore(snapshot)
            raise
        return movements

    def disassemble(self, kit_sku: str, kits, location: str) -> list[Movement]:
        """Break kits back into components, splitting the kits' cost by component quantity."""
        count = positive_quantity(kits)
        bom = self._bom(kit_sku)
        snapshot = self.ledger._snapshot()
        movements: list[Movement] = []
        try:
            before = self.ledger.cogs[kit_sku]
            movements.extend(self.ledger.issue(kit_sku, count, location, reference="disassembly"))
            kit_cost = self.ledger.cogs[kit_sku] - before
            self.ledger.cogs[kit_sku] = before
            units = sum(bom.components.values(), Decimal(0)) * count
            for sku, qty in bom.requirements(count).items():
                movements.append(self.ledger.receive(sku, qty, location, unit_cost=kit_cost / units,
                                                     reference=f"disassemble {kit_sku}"))
        except LedgerError:
            self.ledger._restore(snapshot)
            raise
        return movements


# -- stocktakes ---------------------------------------------------------------------------------------


@dataclass
class Stocktake:
    """A full count of one location tree: blocks it, collects counts, then posts the differences."""

    ledger: Ledger
    root: str
    counts: dict[tuple[str, str], Decimal] = field(default_factory=dict)
    open: bool = True

    def __post_init__(self) -> None:
        for code in self.ledger.locations.descendants(self.root):
            self.ledger.block(code)

    def record(self, sku: str, location: str, counted) -> None:
        if not self.open:
            raise LedgerError("the stocktake is finished")
        if location not in self.ledger.locations.descendants(self.root):
            raise ValidationError(f"{location} is not part of the stocktake of {self.root}")
        self.ledger.catalogue.get(sku)
        quantity = to_quantity(counted, "counted quantity")
        if quantity < 0:
            raise ValidationError("a counted quantity cannot be negative")
        self.counts[(sku, location)] = quantity

    def variances(self) -> list[tuple[str, str, Decimal, Decimal]]:
        """(sku, location, system quantity, counted) for every position that differs.

        Positions with stock that were not counted at all are reported with a count of 0.
        """
        keys = set(self.counts)
        for (sku, location, _), qty in self.ledger.positions().items():
            if location in self.ledger.locations.descendants(self.root) and qty:
                keys.add((sku, location))
        rows = []
        for sku, location in sorted(keys):
            system = self.ledger.quantity_at(sku, location)
            counted = self.counts.get((sku, location), Decimal(0))
            if system != counted:
                rows.append((sku, location, system, counted))
        return rows

    def post(self, reason: str = "stocktake") -> list[Movement]:
        """Unblock the locations and book the variances as adjustments."""
        variances = self.variances()
        for code in self.ledger.locations.descendants(self.root):
            self.ledger.unblock(code)
        self.open = False
        movements = []
        for sku, location, _, counted in variances:
            movement = self.ledger.adjust(sku, location, counted, reason=reason)
            if movement is not None:
                movements.append(movement)
        return movements

    def abandon(self) -> None:
        for code in self.ledger.locations.descendants(self.root):
            self.ledger.unblock(code)
        self.open = False


# -- demand planning ----------------------------------------------------------------------------------


def daily_usage(ledger: Ledger, sku: str, days: int, until: datetime | None = None) -> Decimal:
    """Average units issued per day over the last `days` days."""
    if days < 1:
        raise ValidationError("days must be at least 1")
    end = until or ledger._clock()
    start = end - timedelta(days=days)
    issued = sum((-m.quantity for m in ledger.journal.between(start, end) if m.sku == sku and m.kind == "issue"),
                 Decimal(0))
    return issued / days


def days_of_cover(ledger: Ledger, sku: str, days: int = 30) -> Decimal | None:
    """How many days available stock lasts at recent usage (None when nothing was used)."""
    usage = daily_usage(ledger, sku, days)
    if usage == 0:
        return None
    return ledger.available(sku) / usage


def recommended_reorder_point(ledger: Ledger, sku: str, lead_time_days: int, safety_days: int = 0,
                              history_days: int = 30) -> Decimal:
    """Usage during the supplier lead time plus safety stock, rounded up to a whole unit."""
    usage = daily_usage(ledger, sku, history_days)
    point = usage * (lead_time_days + safety_days)
    return point.to_integral_value(rounding="ROUND_CEILING")
