import datetime as dt
from decimal import Decimal

import pytest

from ledger import (
    AccountClosed,
    AccountFrozen,
    CurrencyMismatch,
    InsufficientFunds,
    InvalidAmount,
    Ledger,
    LedgerError,
)


class Clock:
    def __init__(self):
        self.now = dt.datetime(2024, 1, 1, 9, 0)

    def __call__(self):
        self.now += dt.timedelta(hours=1)
        return self.now


@pytest.fixture
def ledger():
    book = Ledger(overdraft_fee="10", clock=Clock())
    book.open_account("alice", "Alice", overdraft_limit="100")
    book.open_account("bob", "Bob")
    book.open_account("carol", "Carol", currency="usd")
    return book


def test_deposit_and_withdraw(ledger):
    ledger.deposit("alice", "50.005")
    ledger.withdraw("alice", 20)
    assert ledger.get("alice").balance == Decimal("30.00")
    assert [t.kind for t in ledger.get("alice").history] == ["deposit", "withdrawal"]


@pytest.mark.parametrize("bad", [0, -5, "abc", 1.5, "NaN"])
def test_invalid_amounts(ledger, bad):
    with pytest.raises(InvalidAmount):
        ledger.deposit("alice", bad)


def test_overdraft_limit_and_fee(ledger):
    ledger.withdraw("alice", 60)
    account = ledger.get("alice")
    assert account.balance == Decimal("-70.00")  # 60 + 10 fee
    with pytest.raises(InsufficientFunds):
        ledger.withdraw("alice", 31)
    assert account.balance == Decimal("-70.00")


def test_no_overdraft_without_limit(ledger):
    ledger.deposit("bob", 10)
    with pytest.raises(InsufficientFunds):
        ledger.withdraw("bob", "10.01")


def test_transfer_moves_money_with_one_reference(ledger):
    ledger.deposit("alice", 100)
    ref = ledger.transfer("alice", "bob", 40, "rent")
    assert ledger.get("alice").balance == Decimal("60.00")
    assert ledger.get("bob").balance == Decimal("40.00")
    assert ledger.get("bob").history[-1].reference == ref
    assert ledger.audit() == []


def test_transfer_checks(ledger):
    with pytest.raises(CurrencyMismatch):
        ledger.transfer("alice", "carol", 1)
    with pytest.raises(LedgerError):
        ledger.transfer("alice", "alice", 1)
    with pytest.raises(InsufficientFunds):
        ledger.transfer("bob", "alice", 1)


def test_transfer_to_frozen_account_keeps_the_money(ledger):
    ledger.deposit("alice", 100)
    ledger.freeze("bob")
    with pytest.raises(AccountFrozen):
        ledger.transfer("alice", "bob", 40)
    assert ledger.get("alice").balance == Decimal("100.00")
    assert ledger.get("bob").balance == Decimal("0.00")
    assert ledger.audit() == []


def test_failed_transfer_into_overdraft_undoes_the_fee(ledger):
    ledger.open_account("dave", "Dave")
    ledger.close_account("dave")
    with pytest.raises(AccountClosed):
        ledger.transfer("alice", "dave", 50)
    assert ledger.get("alice").balance == Decimal("0.00")
    assert ledger.get("alice").history == []


def test_frozen_account_rejects_deposits(ledger):
    ledger.freeze("alice")
    with pytest.raises(AccountFrozen):
        ledger.deposit("alice", 1)
    ledger.unfreeze("alice")
    ledger.deposit("alice", 1)


def test_reverse_deposit_once(ledger):
    txn = ledger.deposit("bob", 30)
    ledger.reverse(txn.id)
    assert ledger.get("bob").balance == Decimal("0.00")
    with pytest.raises(LedgerError):
        ledger.reverse(txn.id)


def test_monthly_interest(ledger):
    ledger.deposit("bob", 1200)
    ledger.withdraw("alice", 50)
    ledger.apply_monthly_interest()
    assert ledger.get("bob").balance == Decimal("1201.20")
    assert ledger.get("alice").balance == Decimal("-60.90")  # -60 * 0.18 / 12 = -0.90


def test_statement_balances(ledger):
    clock_start = dt.datetime(2024, 1, 1, 9, 0)
    ledger.deposit("bob", 10)  # 10:00
    ledger.deposit("bob", 20)  # 11:00
    ledger.withdraw("bob", 5)  # 12:00
    statement = ledger.statement("bob", clock_start + dt.timedelta(hours=1, minutes=30), clock_start + dt.timedelta(days=1))
    assert statement.opening_balance == Decimal("10.00")
    assert statement.closing_balance == Decimal("25.00")
    assert (statement.money_in, statement.money_out) == (Decimal("20.00"), Decimal("5.00"))


def test_close_requires_zero_balance(ledger):
    ledger.deposit("bob", 1)
    with pytest.raises(LedgerError):
        ledger.close_account("bob")
