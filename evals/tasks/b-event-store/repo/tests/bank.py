"""A small bank-account domain used by the tests."""

from dataclasses import dataclass

from evstore import Aggregate, CommandRejected, EventTypeRegistry

registry = EventTypeRegistry()


@registry.event()
@dataclass
class Opened:
    owner: str


@registry.event(version=2)
@dataclass
class Deposited:
    amount: int
    note: str = ""


@registry.event()
@dataclass
class Withdrawn:
    amount: int


@registry.upcaster("Deposited", 1)
def _deposit_v1_to_v2(payload):
    # v1 stored the amount in euros as "euros"; v2 stores "amount" (same unit) and an optional note.
    return {"amount": payload["euros"], "note": ""}


class Account(Aggregate):
    category = "account"

    def __init__(self, aggregate_id):
        super().__init__(aggregate_id)
        self.owner = None
        self.balance = 0
        self.deposits = 0

    def open(self, owner):
        if self.owner is not None:
            raise CommandRejected("already open")
        self.record(Opened(owner))

    def deposit(self, amount, note=""):
        if amount <= 0:
            raise CommandRejected("amount must be positive")
        self.record(Deposited(amount, note))

    def withdraw(self, amount):
        if amount > self.balance:
            raise CommandRejected("insufficient funds")
        self.record(Withdrawn(amount))

    def apply_Opened(self, event):
        self.owner = event.owner

    def apply_Deposited(self, event):
        self.balance += event.amount
        self.deposits += 1

    def apply_Withdrawn(self, event):
        self.balance -= event.amount
