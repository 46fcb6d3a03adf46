"""Errors raised by the ledger. All derive from LedgerError."""


class LedgerError(Exception):
    """Base class for every ledger failure."""


class AccountNotFound(LedgerError):
    pass


class AccountFrozen(LedgerError):
    """The account is frozen: no money may move in or out."""


class AccountClosed(LedgerError):
    pass


class InsufficientFunds(LedgerError):
    """The withdrawal would take the balance below the overdraft limit."""


class CurrencyMismatch(LedgerError):
    pass


class InvalidAmount(LedgerError):
    pass
