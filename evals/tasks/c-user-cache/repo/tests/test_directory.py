import pytest

from userdir import DuplicateEmail, UserDirectory, UserNotFound


@pytest.fixture
def users():
    return UserDirectory()


def test_lookups_are_cached(users):
    ann = users.create("Ann@Example.com", "Ann")
    reads = users.store.reads
    assert users.get(ann.id) == ann
    assert users.find_by_email("ann@example.com") == ann
    assert users.find_by_email("ann@example.com") == ann
    assert users.store.reads == reads + 1  # one read for the email lookup, none for the cached id


def test_rename_is_visible_through_both_lookups(users):
    ann = users.create("ann@example.com", "Ann")
    users.find_by_email("ann@example.com")
    users.rename(ann.id, "Ann Lee")
    assert users.get(ann.id).name == "Ann Lee"
    assert users.find_by_email("ann@example.com").name == "Ann Lee"


def test_change_email_moves_the_email_lookup(users):
    ann = users.create("ann@example.com", "Ann")
    assert users.find_by_email("ann@example.com") == ann
    assert users.find_by_email("ann.lee@example.com") is None
    users.change_email(ann.id, "ann.lee@example.com")
    assert users.find_by_email("ann@example.com") is None
    assert users.find_by_email("ann.lee@example.com").id == ann.id
    assert users.get(ann.id).email == "ann.lee@example.com"


def test_deactivated_user_reads_inactive_by_email(users):
    bob = users.create("bob@example.com", "Bob")
    assert users.find_by_email("bob@example.com").active
    users.deactivate(bob.id)
    assert not users.find_by_email("bob@example.com").active
    assert [u.email for u in users.list_users()] == []


def test_deleted_user_is_gone_from_both_lookups(users):
    bob = users.create("bob@example.com", "Bob")
    users.find_by_email("bob@example.com")
    users.delete(bob.id)
    with pytest.raises(UserNotFound):
        users.get(bob.id)
    assert users.find_by_email("bob@example.com") is None


def test_created_user_is_found_after_a_failed_lookup(users):
    assert not users.exists("cy@example.com")
    cy = users.create("cy@example.com", "Cy")
    assert users.find_by_email("cy@example.com") == cy


def test_duplicate_emails_are_refused(users):
    ann = users.create("ann@example.com", "Ann")
    bob = users.create("bob@example.com", "Bob")
    with pytest.raises(DuplicateEmail):
        users.create("ANN@example.com", "Other Ann")
    with pytest.raises(DuplicateEmail):
        users.change_email(bob.id, "ann@example.com")
    assert users.change_email(ann.id, "Ann@Example.com").email == "ann@example.com"


def test_promote_tags_and_search(users):
    ann = users.create("ann@example.com", "Ann", tags=["ops"])
    users.promote(ann.id)
    users.add_tags(ann.id, "oncall", "ops")
    assert users.get(ann.id).role == "admin" and users.get(ann.id).tags == ("oncall", "ops")
    assert [u.id for u in users.search("ANN")] == [ann.id]
    assert users.list_users(role="admin") == [users.get(ann.id)]


def test_import_reports_bad_rows(users):
    created, errors = users.import_users([
        {"email": "a@example.com", "name": "A"},
        {"email": "not-an-email", "name": "B"},
        {"name": "no email"},
        {"email": "a@example.com", "name": "A again"},
        {"email": "d@example.com", "name": "D", "role": "wizard"},
    ])
    assert [u.email for u in created] == ["a@example.com"]
    assert [e.split(":")[0] for e in errors] == ["row 2", "row 3", "row 4", "row 5"]


def test_update_rejects_unknown_fields(users):
    ann = users.create("ann@example.com", "Ann")
    with pytest.raises(TypeError):
        users.update(ann.id, password="x")
