import pytest

from vercheck import Version, max_satisfying, satisfies


def test_ordering():
    assert Version("1.2.3") < Version("1.10.0")
    assert Version("2.0.0") > Version("1.99.99")
    assert Version("1.2") == Version("1.2.0")


def test_prerelease_sorts_before_release():
    assert Version("1.0.0-rc.1") < Version("1.0.0")
    assert Version("1.0.0-alpha.2") < Version("1.0.0-alpha.10")
    assert Version("1.0.0-alpha.9") < Version("1.0.0-beta")


def test_invalid_version():
    with pytest.raises(ValueError):
        Version("one.two")


def test_lower_bound():
    assert satisfies("1.4.0", ">=1.4")
    assert not satisfies("1.3.9", ">=1.4")


def test_exclusive_range():
    assert satisfies("1.9.9", ">=1.2,<2")
    assert not satisfies("2.0.0", ">=1.2,<2")


def test_inclusive_upper_bound():
    assert satisfies("1.4.0", "<=1.4.0")
    assert satisfies("1.3.0", ">1.0,<=1.4")


def test_max_satisfying_inclusive_bound():
    assert max_satisfying(["1.3.0", "1.4.0", "1.5.0"], "<=1.4.0") == "1.4.0"


def test_max_satisfying_none():
    assert max_satisfying(["0.9.0"], ">=1") is None


def test_bare_version_means_equal():
    assert satisfies("v3.1.0", "3.1")
    assert not satisfies("3.1.1", "3.1")
