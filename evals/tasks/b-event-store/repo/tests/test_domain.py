import dataclasses

import pytest
from bank import Account, Deposited, Opened, Withdrawn, registry

from evstore import (
    NO_STREAM,
    AggregateNotFound,
    AggregateScenario,
    CommandBus,
    CommandRejected,
    EventData,
    EventStore,
    InMemoryCheckpoints,
    Outbox,
    Projection,
    ProjectionError,
    ProjectionRunner,
    Repository,
    SnapshotStore,
    Subscription,
    WrongExpectedVersion,
)
from evstore import store as es


def open_account(repo, account_id, owner="ann", deposits=()):
    account = Account(account_id)
    account.open(owner)
    for amount in deposits:
        account.deposit(amount)
    repo.save(account)
    return account


def test_repository_round_trip_and_concurrency():
    store = EventStore()
    repo = Repository(store, registry, Account)
    open_account(repo, "1", deposits=[10, 20])
    first, second = repo.load("1"), repo.load("1")
    assert (first.balance, first.version) == (30, 3)
    first.withdraw(5)
    repo.save(first)
    second.deposit(1)
    with pytest.raises(WrongExpectedVersion):
        repo.save(second)
    with pytest.raises(AggregateNotFound):
        repo.load("missing")


def test_upcasting_old_payloads():
    store = EventStore()
    store.append("account-old", [EventData("Opened", {"owner": "bo"}), EventData("Deposited", {"euros": 7})], NO_STREAM)
    account = Repository(store, registry, Account).load("old")
    assert account.balance == 7 and account.deposits == 1


def test_snapshot_is_taken_every_n_events():
    store = EventStore()
    snapshots = SnapshotStore()
    repo = Repository(store, registry, Account, snapshots=snapshots, snapshot_every=3)
    account = open_account(repo, "1", deposits=[10])
    assert snapshots.load(account.stream_id) is None
    account.deposit(20)
    repo.save(account)
    snapshot = snapshots.load(account.stream_id)
    assert snapshot.version == 3 and snapshot.state["balance"] == 30


def test_load_from_snapshot_applies_only_later_events():
    store = EventStore()
    snapshots = SnapshotStore()
    repo = Repository(store, registry, Account, snapshots=snapshots, snapshot_every=3)
    account = open_account(repo, "1", deposits=[10, 20])  # versions 1-3, snapshot at 3
    assert repo.load("1").balance == 30
    account.deposit(5)
    repo.save(account)
    loaded = repo.load("1")
    assert (loaded.balance, loaded.deposits, loaded.version) == (35, 3, 4)


def test_snapshot_survives_history_truncation():
    store = EventStore()
    snapshots = SnapshotStore()
    repo = Repository(store, registry, Account, snapshots=snapshots, snapshot_every=2)
    account = open_account(repo, "1", deposits=[10, 20, 30])  # versions 1-4, snapshot at 4
    store.truncate(account.stream_id, 5)
    account.withdraw(15)
    repo.save(account)
    assert repo.load("1").balance == 45


def test_load_at_version():
    repo = Repository(EventStore(), registry, Account)
    open_account(repo, "1", deposits=[10, 20])
    assert repo.load_at("1", 2).balance == 10


def test_scenario_helper():
    AggregateScenario(Account).given(Opened("ann"), Deposited(50)).when(lambda a: a.withdraw(20)).then(Withdrawn(20))
    AggregateScenario(Account).given(Opened("ann")).when(lambda a: a.withdraw(1)).then_raises(CommandRejected, "insufficient")


def test_command_bus_retries_conflicts():
    store = EventStore()
    repo = Repository(store, registry, Account)
    open_account(repo, "1", deposits=[100])
    bus = CommandBus(max_attempts=3)
    interfering = {"left": 1}

    @dataclasses.dataclass
    class Withdraw:
        account_id: str
        amount: int

    @bus.handles(Withdraw)
    def withdraw(command):
        account = repo.load(command.account_id)
        if interfering["left"]:
            interfering["left"] -= 1
            other = repo.load(command.account_id)
            other.deposit(1)
            repo.save(other)
        account.withdraw(command.amount)
        return repo.save(account)

    assert bus.dispatch(Withdraw("1", 30)) == 4
    assert bus.conflicts == 1 and repo.load("1").balance == 71


def test_catch_up_subscription_resumes_from_checkpoint():
    store = EventStore()
    repo = Repository(store, registry, Account)
    seen = []
    checkpoints = InMemoryCheckpoints()
    open_account(repo, "1", deposits=[10])
    sub = Subscription(store, "audit", lambda e: seen.append(e.type), checkpoints=checkpoints, types=["Deposited"]).start()
    open_account(repo, "2", deposits=[5, 6])
    sub.stop()
    open_account(repo, "3", deposits=[7])
    assert seen == ["Deposited"] * 3
    Subscription(store, "audit", lambda e: seen.append(e.type), checkpoints=checkpoints, types=["Deposited"]).start()
    assert seen == ["Deposited"] * 4


def test_failing_live_subscriber_does_not_break_writers():
    store = EventStore()

    def explode(event):
        raise RuntimeError("consumer bug")

    sub = Subscription(store, "fragile", explode).start()
    store.append("s-1", [EventData("X", {})])
    assert isinstance(sub.failed, RuntimeError) and not sub.running
    assert store.position == 1


class Balances(Projection):
    name = "balances"

    def __init__(self, fail_on=None):
        self.fail_on = fail_on
        self.balances = {}

    def on_Deposited(self, event):
        if event.data["amount"] == self.fail_on:
            raise ValueError("bad amount")
        self.balances[event.stream_id] = self.balances.get(event.stream_id, 0) + event.data["amount"]

    def on_Withdrawn(self, event):
        self.balances[event.stream_id] -= event.data["amount"]

    def reset(self):
        self.balances = {}


def test_projection_runner_parks_failures_and_rebuilds():
    store = EventStore()
    repo = Repository(store, registry, Account)
    open_account(repo, "1", deposits=[10, 13, 20])
    projection = Balances(fail_on=13)
    runner = ProjectionRunner(store, projection)
    assert runner.run_once() == 4
    assert projection.balances == {"account-1": 30}
    assert [d.event.data["amount"] for d in runner.dead_letters] == [13]
    projection.fail_on = None
    assert runner.retry_dead_letters() == 1 and projection.balances == {"account-1": 43}
    assert runner.rebuild() == 4 and projection.balances == {"account-1": 43}
    strict = ProjectionRunner(store, Balances(fail_on=20), on_error="stop")
    with pytest.raises(ProjectionError):
        strict.run_once()
    assert strict.position == 3


def test_counter_and_partitioned_projections():
    store = EventStore()
    repo = Repository(store, registry, Account)
    open_account(repo, "1", deposits=[10])
    open_account(repo, "2", owner="bo")
    counter = es.EventTypeCounter()
    es.runner_for(store, counter).run_once()
    assert counter.counts == {"Opened": 2, "Deposited": 1}
    owners = es.PartitionedProjection(lambda state, e: {**state, "owner": e.data["owner"]}, ["Opened"], name="owners")
    es.runner_for(store, owners).run_once()
    assert owners.where(lambda s: s["owner"] == "bo") == {"account-2": {"owner": "bo"}}


def test_process_manager_is_idempotent():
    store = EventStore()

    class Welcome(es.ProcessManager):
        name = "welcome"

        def when_Opened(self, event):
            return [(f"mail-{event.data['owner']}", EventData("WelcomeMailQueued", {"to": event.data["owner"]}))]

    manager = Welcome(store)
    store.append("account-1", [EventData("Opened", {"owner": "ann"})])
    first = store.read_all()[0]
    manager.react(first)
    manager.react(first)  # replayed after a restart
    mails = store.read_stream("mail-ann")
    assert len(mails) == 1 and mails[0].causation_id == first.event_id
    assert [e.type for e in es.correlated(store, first.event_id)] == ["Opened", "WelcomeMailQueued"]


def test_outbox_retries_in_order_with_backoff():
    clock_now = [es._utcnow()]
    store = EventStore(clock=lambda: clock_now[0])
    for n in range(3):
        store.append("s-1", [EventData("X", {"n": n})])
    sent, broken = [], {"n": 1}

    def publish(event):
        if event.data["n"] == broken["n"]:
            raise ConnectionError("broker down")
        sent.append(event.data["n"])

    outbox = Outbox(store, publish, base_delay=10)
    assert outbox.pump() == 1 and sent == [0]
    assert outbox.status().failures == 1
    assert outbox.pump() == 0  # still backing off
    broken["n"] = None
    clock_now[0] += es.dt.timedelta(seconds=11)
    assert outbox.pump() == 2 and sent == [0, 1, 2]


def test_typed_stream_and_metrics():
    store = EventStore()
    metrics = es.StoreMetrics(store)
    stream = es.TypedStream(store, registry, "account-9")
    assert stream.append([Opened("cy"), Deposited(5)], NO_STREAM) == 2
    stream.append([Deposited(7, "gift")])
    assert stream.read(2) == [Deposited(5), Deposited(7, "gift")]
    assert stream.fold(0, lambda total, e: total + getattr(e, "amount", 0)) == 12
    assert metrics.snapshot()["by_type"] == {"Deposited": 2, "Opened": 1}
    assert metrics.snapshot()["largest_batch"] == 2
