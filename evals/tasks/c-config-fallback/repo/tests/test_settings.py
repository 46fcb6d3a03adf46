import pytest

from appconf import ConfigError, load_settings

ENV = {"APP_DB__URL": "postgres://db/app"}


def test_defaults_with_the_required_url():
    s = load_settings(environ=ENV)
    assert (s.host, s.port, s.debug, s.workers, s.timeout) == ("127.0.0.1", 8000, False, 4, 30.0)
    assert s.allowed_hosts == ["localhost"] and s["db.pool_size"] == 5
    assert s.source("port") == "default" and s.source("db.url") == "APP_DB__URL"


def test_file_then_environment(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"port": 9000, "workers": 2, "log_level": "debug", "db": {"url": "sqlite://"}}')
    s = load_settings(str(path), {"APP_WORKERS": "8", "APP_TIMEOUT": "2m", "APP_ALLOWED_HOSTS": "a.com, b.com"})
    assert (s.port, s.workers, s.timeout, s.log_level) == (9000, 8, 120.0, "DEBUG")
    assert s.allowed_hosts == ["a.com", "b.com"]
    assert s.source("port") == str(path) and s.source("workers") == "APP_WORKERS"


def test_missing_file_means_defaults(tmp_path):
    assert load_settings(str(tmp_path / "absent.json"), ENV).port == 8000


def test_malformed_file_is_not_silently_ignored(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"port": 9000, "debug": true,}')
    with pytest.raises(ConfigError) as info:
        load_settings(str(path), ENV)
    assert str(path) in str(info.value)


def test_bad_environment_value_names_the_variable():
    with pytest.raises(ConfigError) as info:
        load_settings(environ={**ENV, "APP_WORKERS": "four"})
    assert info.value.source == "APP_WORKERS" and info.value.key == "workers"
    assert "four" in str(info.value)


def test_bad_file_value_names_the_file_and_key(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"debug": "sometimes", "db": {"url": "sqlite://"}}')
    with pytest.raises(ConfigError) as info:
        load_settings(str(path))
    assert info.value.source == str(path) and info.value.key == "debug"


def test_out_of_range_values_are_errors():
    with pytest.raises(ConfigError, match="at least 1"):
        load_settings(environ={**ENV, "APP_PORT": "0"})
    with pytest.raises(ConfigError, match="must be one of"):
        load_settings(environ={**ENV, "APP_LOG_LEVEL": "loud"})


def test_unknown_keys():
    s = load_settings(environ={**ENV, "APP_SOMETHING_ELSE": "1"})
    assert "something_else" not in s


def test_unknown_key_in_the_file_is_an_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"prot": 9000, "db": {"url": "sqlite://"}}')
    with pytest.raises(ConfigError, match="prot: unknown setting"):
        load_settings(str(path))


def test_required_url_is_reported_with_its_variable():
    with pytest.raises(ConfigError, match="APP_DB__URL"):
        load_settings(environ={})


def test_describe_hides_urls():
    text = load_settings(environ=ENV).describe()
    assert "postgres" not in text and "db.url" in text and "(APP_DB__URL)" in text
