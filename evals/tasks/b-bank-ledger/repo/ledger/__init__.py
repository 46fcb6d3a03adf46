from ledger.errors import (
    AccountClosed,
    AccountFrozen,
    AccountNotFound,
    CurrencyMismatch,
    InsufficientFunds,
    InvalidAmount,
    LedgerError,
)
from ledger.ledger import Account, Ledger, Statement, Transaction

__all__ = [
    "Account",
    "AccountClosed",
    "AccountFrozen",
    "AccountNotFound",
    "CurrencyMismatch",
    "InsufficientFunds",
    "InvalidAmount",
    "Ledger",
    "LedgerError",
    "Statement",
    "Transaction",
]
