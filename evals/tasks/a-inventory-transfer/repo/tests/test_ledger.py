from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest

from stockroom import (
    CapacityExceeded,
    InsufficientStock,
    Item,
    Ledger,
    Location,
    LocationBlocked,
    ReservationError,
    UnknownLocation,
    ValidationError,
)
from stockroom.ledger import Assembly, Fulfilment, Purchasing, Stocktake, stock_report


class Clock:
    def __init__(self):
        self.now = datetime(2024, 5, 1, 8, 0)

    def __call__(self):
        self.now += timedelta(minutes=1)
        return self.now


@pytest.fixture
def ledger():
    led = Ledger(clock=Clock())
    led.catalogue.add(Item("BOLT", "Hex bolt M6", packaging={"box": 12}))
    led.catalogue.add(Item("MILK", "Milk 1l", lot_tracked=True))
    led.catalogue.add(Item("NUT", "Hex nut M6", reorder_point=10, reorder_qty=100))
    led.locations.add(Location("WH1", "Main warehouse", kind="warehouse"))
    led.locations.add(Location("A1", "Aisle 1 bin", parent="WH1"))
    led.locations.add(Location("A2", "Aisle 2 bin", parent="WH1", capacity=50))
    led.locations.add(Location("SCRAP", "Scrap", kind="virtual"))
    return led


def test_receive_and_on_hand(ledger):
    ledger.receive("BOLT", 2, "A1", unit="box", unit_cost="1.20")
    ledger.receive("BOLT", 6, "A2", unit_cost="0.12")
    assert ledger.on_hand("BOLT", "A1") == 24
    assert ledger.on_hand("BOLT", "WH1") == 30
    assert ledger.costs.average_cost("BOLT") == Decimal("0.104")
    with pytest.raises(ValidationError):
        ledger.receive("BOLT", 1, "A1", unit="pallet")
    with pytest.raises(UnknownLocation):
        ledger.receive("BOLT", 1, "NOWHERE")


def test_issue_picks_first_expiring_lot(ledger):
    ledger.receive("MILK", 5, "A1", lot="L2", expires=date(2024, 5, 20))
    ledger.receive("MILK", 5, "A1", lot="L1", expires=date(2024, 5, 10))
    movements = ledger.issue("MILK", 7, "A1")
    assert [(m.lot, m.quantity) for m in movements] == [("L1", -5), ("L2", -2)]
    with pytest.raises(ValidationError):
        ledger.receive("MILK", 1, "A1")


def test_failed_issue_changes_nothing(ledger):
    ledger.receive("BOLT", 5, "A1")
    with pytest.raises(InsufficientStock):
        ledger.issue("BOLT", 6, "A1")
    assert ledger.on_hand("BOLT") == 5 and len(ledger.journal) == 1


def test_transfer_moves_stock(ledger):
    ledger.receive("BOLT", 40, "A1", unit_cost="0.10")
    out, inbound = ledger.transfer("BOLT", 15, "A1", "A2")
    assert out.transaction == inbound.transaction
    assert ledger.quantity_at("BOLT", "A1") == 25 and ledger.quantity_at("BOLT", "A2") == 15
    assert ledger.on_hand("BOLT", "WH1") == 40
    assert ledger.audit() == []


def test_transfer_rejects_bad_input(ledger):
    ledger.receive("BOLT", 5, "A1")
    with pytest.raises(InsufficientStock):
        ledger.transfer("BOLT", 6, "A1", "A2")
    with pytest.raises(UnknownLocation):
        ledger.transfer("BOLT", 1, "A1", "B9")
    with pytest.raises(ValidationError):
        ledger.transfer("BOLT", 1, "A1", "A1")
    assert ledger.quantity_at("BOLT", "A1") == 5 and len(ledger.journal) == 1


def test_transfer_into_full_bin_keeps_source_stock(ledger):
    ledger.receive("NUT", 45, "A2")
    ledger.receive("BOLT", 20, "A1")
    with pytest.raises(CapacityExceeded):
        ledger.transfer("BOLT", 10, "A1", "A2")
    assert ledger.quantity_at("BOLT", "A1") == 20
    assert ledger.on_hand("BOLT") == 20
    assert len(ledger.journal) == 2
    assert ledger.audit() == []


def test_transfer_into_blocked_location_keeps_source_stock(ledger):
    ledger.receive("BOLT", 20, "A1")
    ledger.block("A2")
    with pytest.raises(LocationBlocked):
        ledger.transfer("BOLT", 5, "A1", "A2")
    assert ledger.quantity_at("BOLT", "A1") == 20
    assert [m.kind for m in ledger.journal] == ["receipt"]


def test_reservations(ledger):
    ledger.receive("BOLT", 10, "A1")
    ledger.reserve("SO-1", "BOLT", 8, "A1")
    assert ledger.available("BOLT") == 2
    with pytest.raises(InsufficientStock):
        ledger.issue("BOLT", 3, "A1")
    ledger.issue("BOLT", 8, "A1", order_id="SO-1")
    assert ledger.reserved("BOLT") == 0 and ledger.on_hand("BOLT") == 2
    with pytest.raises(ReservationError):
        ledger.reserve("SO-2", "BOLT", 3, "A1")


def test_reverse_transfer(ledger):
    ledger.receive("BOLT", 10, "A1")
    out, _ = ledger.transfer("BOLT", 4, "A1", "A2")
    ledger.reverse(out.id)
    assert ledger.quantity_at("BOLT", "A1") == 10 and ledger.quantity_at("BOLT", "A2") == 0
    with pytest.raises(Exception):
        ledger.reverse(out.id)
    assert ledger.audit() == []


def test_fifo_valuation_and_cogs(ledger):
    ledger.receive("BOLT", 10, "A1", unit_cost="1")
    ledger.receive("BOLT", 10, "A1", unit_cost="2")
    ledger.issue("BOLT", 15, "A1")
    assert ledger.cogs["BOLT"] == Decimal("20")
    assert ledger.valuation()["BOLT"] == Decimal("10")


def test_batch_is_all_or_nothing(ledger):
    rows = [
        {"action": "receive", "sku": "BOLT", "qty": "10", "location": "A1", "unit_cost": "0.5"},
        {"action": "issue", "sku": "BOLT", "qty": "99", "location": "A1"},
    ]
    with pytest.raises(ValidationError, match="row 2"):
        ledger.apply_batch(rows)
    assert len(ledger.journal) == 0 and ledger.on_hand("BOLT") == 0
    assert ledger.import_csv("action,sku,qty,location\nreceive,NUT,5,A1\ncount,NUT,4,A1\n") == 2
    assert ledger.on_hand("NUT") == 4
    assert ledger.reorder_suggestions() == [("NUT", 4, 100)]


def test_purchase_order_partial_receipt(ledger):
    purchasing = Purchasing(ledger, over_receipt_tolerance="0.1")
    purchasing.create("PO-7", "ACME", "A1", [("BOLT", 100, "0.05"), ("NUT", 50, "0.02")])
    purchasing.receive("PO-7", {"BOLT": 60})
    assert purchasing.get("PO-7").status == "partial"
    assert purchasing.outstanding("BOLT") == 40
    with pytest.raises(ValidationError):
        purchasing.receive("PO-7", {"BOLT": 60})
    purchasing.receive("PO-7", {"BOLT": 45, "NUT": 50})
    assert purchasing.get("PO-7").status == "received"
    assert ledger.on_hand("BOLT") == 105


def test_fulfilment(ledger):
    ledger.receive("BOLT", 30, "A1")
    ledger.receive("BOLT", 20, "A2")
    shop = Fulfilment(ledger)
    shop.allocate("SO-9", {"BOLT": 40}, "WH1")
    assert [(p.location, p.quantity) for p in shop.pick_list("SO-9")] == [("A1", 30), ("A2", 10)]
    shop.ship("SO-9")
    assert ledger.on_hand("BOLT") == 10 and ledger.reserved("BOLT") == 0
    with pytest.raises(ReservationError):
        shop.allocate("SO-10", {"BOLT": 11}, "WH1")
    assert ledger.reserved("BOLT") == 0


def test_assembly_and_stocktake(ledger):
    ledger.catalogue.add(Item("KIT", "Bolt and nut kit"))
    ledger.receive("BOLT", 10, "A1", unit_cost="0.10")
    ledger.receive("NUT", 20, "A1", unit_cost="0.05")
    assembly = Assembly(ledger)
    assembly.define("KIT", {"BOLT": 1, "NUT": 2})
    assert assembly.buildable("KIT", "A1") == 10
    assembly.assemble("KIT", 4, "A1")
    assert ledger.on_hand("KIT") == 4 and ledger.costs.average_cost("KIT") == Decimal("0.2")
    take = Stocktake(ledger, "WH1")
    with pytest.raises(LocationBlocked):
        ledger.receive("BOLT", 1, "A1")
    take.record("BOLT", "A1", 5)
    take.record("NUT", "A1", 12)
    take.record("KIT", "A1", 4)
    assert take.variances() == [("BOLT", "A1", Decimal(6), Decimal(5))]
    take.post()
    assert ledger.on_hand("BOLT") == 5
    rows = {row["sku"]: row for row in stock_report(ledger)}
    assert rows["NUT"]["available"] == 12
