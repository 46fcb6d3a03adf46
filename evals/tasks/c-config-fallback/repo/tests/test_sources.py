import pytest

from appconf import ConfigError
from appconf.sources import (
    flatten,
    parse_bool,
    parse_duration,
    parse_int,
    parse_list,
    read_env,
    read_json_file,
)


def test_flatten_and_read_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"port": 9000, "db": {"url": "postgres://db/app", "pool_size": 3}}')
    assert read_json_file(path) == {"port": 9000, "db.url": "postgres://db/app", "db.pool_size": 3}
    assert flatten({"a": {"b": {"c": 1}}}) == {"a.b.c": 1}


def test_missing_file_gives_nothing(tmp_path):
    assert read_json_file(tmp_path / "nope.json") == {}


def test_malformed_file_is_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{\n  "port": 9000,\n  "debug": true,\n}\n')
    with pytest.raises(ConfigError) as info:
        read_json_file(path)
    assert str(path) in str(info.value) and "line 4" in str(info.value)


def test_top_level_must_be_an_object(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="object"):
        read_json_file(path)


def test_env_prefix_and_nesting():
    env = {"APP_PORT": "8080", "APP_DB__URL": "sqlite://", "HOME": "/root", "APP_": "x"}
    assert read_env(env) == {"port": "8080", "db.url": "sqlite://"}


@pytest.mark.parametrize("text,seconds", [("30", 30), ("250ms", 0.25), ("5m", 300), ("1.5h", 5400), (12, 12)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


def test_scalars():
    assert parse_bool("Yes") is True and parse_bool("off") is False
    assert parse_int("1_000") == 1000 and parse_int(" -3 ") == -3
    assert parse_list("a, b,,c") == ["a", "b", "c"] and parse_list([1, "x"]) == ["1", "x"]


@pytest.mark.parametrize("parse,value", [(parse_bool, "maybe"), (parse_int, "four"), (parse_int, True),
                                         (parse_int, "1.5"), (parse_duration, "soon")])
def test_bad_scalars(parse, value):
    with pytest.raises(ValueError):
        parse(value)
