"""An in-memory double-checked ledger of bank accounts.

Amounts are ``Decimal`` rounded to cents. Every balance change is recorded as a `Transaction` in the
account's history, so a balance can always be recomputed from its history (see `Ledger.audit`).

Overdraft rules:

* an account may go negative down to ``-overdraft_limit``; a withdrawal beyond that raises
  `InsufficientFunds` and changes nothing;
* the first withdrawal that takes a non-negative balance below zero is charged ``overdraft_fee``
  (as a separate "fee" transaction), as long as the fee itself fits within the limit;
* monthly interest pays ``savings_rate / 12`` on positive balances and charges ``overdraft_rate / 12``
  on negative ones.
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Callable

from ledger.errors import (
    AccountClosed,
    AccountFrozen,
    AccountNotFound,
    CurrencyMismatch,
    InsufficientFunds,
    InvalidAmount,
    LedgerError,
)

logger = logging.getLogger(__name__)

CENT = Decimal("0.01")


def to_amount(value: Decimal | int | str) -> Decimal:
    """Parse a positive amount of money, rounded to cents. Floats are refused (binary rounding)."""
    if isinstance(value, float):
        raise InvalidAmount("pass amounts as Decimal, int or str, not float")
    try:
        amount = Decimal(value).quantize(CENT, rounding=ROUND_HALF_EVEN)
    except (InvalidOperation, TypeError, ValueError) as exc:
        raise InvalidAmount(f"not an amount: {value!r}") from exc
    if not amount.is_finite() or amount <= 0:
        raise InvalidAmount(f"amount must be positive, got {value!r}")
    return amount


@dataclass(frozen=True)
class Transaction:
    """One posted balance change. `amount` is signed: negative takes money out."""

    id: int
    account_id: str
    kind: str
    amount: Decimal
    balance_after: Decimal
    memo: str
    at: dt.datetime
    reference: str | None = None


@dataclass
class Account:
    id: str
    owner: str
    currency: str
    overdraft_limit: Decimal = Decimal("0.00")
    balance: Decimal = Decimal("0.00")
    frozen: bool = False
    closed: bool = False
    history: list[Transaction] = field(default_factory=list)

    @property
    def available(self) -> Decimal:
        """What can still be withdrawn, overdraft included."""
        return self.balance + self.overdraft_limit


@dataclass(frozen=True)
class Statement:
    account_id: str
    start: dt.datetime
    end: dt.datetime
    opening_balance: Decimal
    closing_balance: Decimal
    transactions: list[Transaction]

    @property
    def money_in(self) -> Decimal:
        return sum((t.amount for t in self.transactions if t.amount > 0), Decimal("0.00"))

    @property
    def money_out(self) -> Decimal:
        return sum((-t.amount for t in self.transactions if t.amount < 0), Decimal("0.00"))


class Ledger:
    """All accounts of one bank. Not thread-safe: callers serialise access."""

    def __init__(
        self,
        *,
        overdraft_fee: Decimal | str = "25.00",
        savings_rate: Decimal | str = "0.012",
        overdraft_rate: Decimal | str = "0.18",
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    ) -> None:
        self.overdraft_fee = Decimal(overdraft_fee)
        self.savings_rate = Decimal(savings_rate)
        self.overdraft_rate = Decimal(overdraft_rate)
        self._clock = clock
        self._accounts: dict[str, Account] = {}
        self._txn_ids = itertools.count(1)
        self._refs = itertools.count(1)

    # --- accounts -------------------------------------------------------------------------------

    def open_account(
        self, account_id: str, owner: str, currency: str = "EUR", overdraft_limit: Decimal | str = "0"
    ) -> Account:
        if account_id in self._accounts:
            raise LedgerError(f"account {account_id!r} already exists")
        limit = Decimal(overdraft_limit).quantize(CENT)
        if limit < 0:
            raise InvalidAmount("overdraft limit cannot be negative")
        account = Account(account_id, owner, currency.upper(), overdraft_limit=limit)
        self._accounts[account_id] = account
        return account

    def get(self, account_id: str) -> Account:
        try:
            return self._accounts[account_id]
        except KeyError:
            raise AccountNotFound(account_id) from None

    def accounts(self, owner: str | None = None) -> list[Account]:
        return [a for a in self._accounts.values() if owner is None or a.owner == owner]

    def freeze(self, account_id: str) -> None:
        self.get(account_id).frozen = True

    def unfreeze(self, account_id: str) -> None:
        self.get(account_id).frozen = False

    def set_overdraft_limit(self, account_id: str, limit: Decimal | str) -> None:
        """Change the limit; lowering it below the current overdraft is refused."""
        account = self._usable(account_id)
        new_limit = Decimal(limit).quantize(CENT)
        if new_limit < 0 or account.balance < -new_limit:
            raise InvalidAmount(f"limit {new_limit} does not cover balance {account.balance}")
        account.overdraft_limit = new_limit

    def close_account(self, account_id: str) -> None:
        account = self._usable(account_id)
        if account.balance != 0:
            raise LedgerError(f"account {account_id!r} still holds {account.balance}")
        account.closed = True

    def _usable(self, account_id: str) -> Account:
        """The account, if money may move through it."""
        account = self.get(account_id)
        if account.closed:
            raise AccountClosed(account_id)
        if account.frozen:
            raise AccountFrozen(account_id)
        return account

    # --- posting --------------------------------------------------------------------------------

    def _post(self, account: Account, kind: str, amount: Decimal, memo: str, reference: str | None = None) -> Transaction:
        account.balance += amount
        txn = Transaction(next(self._txn_ids), account.id, kind, amount, account.balance, memo, self._clock(), reference)
        account.history.append(txn)
        return txn

    def _rollback(self, account: Account, txn: Transaction) -> None:
        """Undo the latest posting on `account` (used when a multi-leg operation fails half way)."""
        if not account.history or account.history[-1] is not txn:
            raise LedgerError(f"transaction {txn.id} is not the latest on {account.id!r}")
        account.history.pop()
        account.balance -= txn.amount

    def deposit(self, account_id: str, amount: Decimal | int | str, memo: str = "") -> Transaction:
        account = self._usable(account_id)
        return self._post(account, "deposit", to_amount(amount), memo)

    def _debit(self, account: Account, amount: Decimal, kind: str, memo: str, reference: str | None = None) -> Transaction:
        """Take `amount` out of `account`, enforcing the overdraft limit and charging the overdraft fee."""
        if amount > account.available:
            raise InsufficientFunds(f"{account.id}: {amount} requested, {account.available} available")
        was_in_credit = account.balance >= 0
        txn = self._post(account, kind, -amount, memo, reference)
        if was_in_credit and account.balance < 0 and self.overdraft_fee and account.available >= self.overdraft_fee:
            self._post(account, "fee", -self.overdraft_fee, "overdraft fee", reference)
        return txn

    def withdraw(self, account_id: str, amount: Decimal | int | str, memo: str = "") -> Transaction:
        return self._debit(self._usable(account_id), to_amount(amount), "withdrawal", memo)

    def transfer(self, source_id: str, target_id: str, amount: Decimal | int | str, memo: str = "") -> str:
        """Move money between two accounts of the same currency; returns the shared reference.

        Either both legs are posted or neither is.
        """
        if source_id == target_id:
            raise LedgerError("cannot transfer to the same account")
        source = self._usable(source_id)
        target = self.get(target_id)
        if source.currency != target.currency:
            raise CurrencyMismatch(f"{source.currency} -> {target.currency}")
        value = to_amount(amount)
        reference = f"T{next(self._refs):06d}"
        debit = self._debit(source, value, "transfer_out", memo, reference)
        try:
            self._post(self._usable(target_id), "transfer_in", value, memo, reference)
        except LedgerError as exc:
            logger.warning("transfer %s from %s failed: %s", reference, source_id, exc)
            return None
        return reference

    def reverse(self, transaction_id: int, memo: str = "reversal") -> Transaction:
        """Post the opposite of a deposit or withdrawal (refunds, chargebacks)."""
        for account in self._accounts.values():
            for txn in account.history:
                if txn.id == transaction_id:
                    break
            else:
                continue
            if txn.kind not in ("deposit", "withdrawal"):
                raise LedgerError(f"cannot reverse a {txn.kind} transaction")
            if any(t.kind == "reversal" and t.reference == f"R{txn.id}" for t in account.history):
                raise LedgerError(f"transaction {txn.id} was already reversed")
            usable = self._usable(account.id)
            if txn.amount > 0:
                return self._debit(usable, txn.amount, "reversal", memo, f"R{txn.id}")
            return self._post(usable, "reversal", -txn.amount, memo, f"R{txn.id}")
        raise LedgerError(f"no transaction {transaction_id}")

    # --- periodic jobs and reports ------------------------------------------------------------------

    def apply_monthly_interest(self) -> list[Transaction]:
        """Pay savings interest and charge overdraft interest; frozen and closed accounts are skipped."""
        posted = []
        for account in self._accounts.values():
            if account.closed or account.frozen or account.balance == 0:
                if account.frozen:
                    logger.info("skipping interest on frozen account %s", account.id)
                continue
            rate = self.savings_rate if account.balance > 0 else self.overdraft_rate
            interest = (account.balance * rate / 12).quantize(CENT, rounding=ROUND_HALF_EVEN)
            if interest:
                posted.append(self._post(account, "interest", interest, "monthly interest"))
        return posted

    def statement(self, account_id: str, start: dt.datetime, end: dt.datetime) -> Statement:
        """Transactions with start <= at < end, with the balances before and after them."""
        account = self.get(account_id)
        opening = Decimal("0.00")
        inside = []
        for txn in account.history:
            if txn.at < start:
                opening = txn.balance_after
            elif txn.at < end:
                inside.append(txn)
        closing = inside[-1].balance_after if inside else opening
        return Statement(account_id, start, end, opening, closing, inside)

    def total_balance(self, currency: str) -> Decimal:
        return sum((a.balance for a in self._accounts.values() if a.currency == currency.upper()), Decimal("0.00"))

    def audit(self) -> list[str]:
        """Problems found by replaying every history; an empty list means the books balance."""
        problems = []
        for account in self._accounts.values():
            running = Decimal("0.00")
            for txn in account.history:
                running += txn.amount
                if running != txn.balance_after:
                    problems.append(f"{account.id}: transaction {txn.id} says {txn.balance_after}, replay gives {running}")
            if running != account.balance:
                problems.append(f"{account.id}: balance {account.balance} but history sums to {running}")
            if account.balance < -account.overdraft_limit:
                problems.append(f"{account.id}: balance {account.balance} beyond overdraft limit")
        by_ref: dict[str, Decimal] = {}
        for account in self._accounts.values():
            for txn in account.history:
                if txn.kind.startswith("transfer_"):
                    by_ref[txn.reference or ""] = by_ref.get(txn.reference or "", Decimal("0")) + txn.amount
        problems += [f"transfer {ref} does not net to zero ({net})" for ref, net in by_ref.items() if net]
        return problems
