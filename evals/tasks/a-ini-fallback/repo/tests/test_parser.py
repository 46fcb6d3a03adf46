import pytest

from iniconf import (
    Config,
    ConfigValueError,
    DuplicateError,
    InterpolationError,
    NoOptionError,
    NoSectionError,
    ParseError,
)
from iniconf.parser import load

SAMPLE = """\
# deployment settings
[DEFAULT]
root = /srv/app
debug = no

[server]
host = 0.0.0.0      ; all interfaces
Port: 8080
static = ${root}/static
log = ${paths:logs}/server.log
motd = Welcome!
    Maintenance on Sundays.

[paths]
logs = /var/log/app
plugins =
    auth
    metrics
"""


@pytest.fixture
def config():
    cfg = Config()
    cfg.read_string(SAMPLE)
    return cfg


def test_sections_and_options(config):
    assert config.sections() == ["server", "paths"]
    assert config.options("server") == ["host", "port", "static", "log", "motd", "root", "debug"]


def test_values_and_inline_comments(config):
    assert config.get("server", "host") == "0.0.0.0"
    assert config.getint("server", "PORT") == 8080
    assert config.get("server", "motd") == "Welcome!\nMaintenance on Sundays."


def test_interpolation(config):
    assert config.get("server", "static") == "/srv/app/static"
    assert config.get("server", "log") == "/var/log/app/server.log"
    assert config.get("server", "static", raw=True) == "${root}/static"


def test_interpolation_errors():
    cfg = Config()
    cfg.read_string("[a]\nx = ${y}\ny = ${x}\nz = ${nope:k}\n")
    with pytest.raises(InterpolationError):
        cfg.get("a", "x")
    with pytest.raises(InterpolationError):
        cfg.get("a", "z")


def test_defaults_and_booleans(config):
    assert config.getboolean("paths", "debug") is False
    assert config.getlist("paths", "plugins", separator=None) == ["auth", "metrics"]


def test_missing_section_and_option_raise(config):
    with pytest.raises(NoSectionError):
        config.get("database", "url")
    with pytest.raises(NoOptionError):
        config.get("server", "timeout")


def test_fallback_for_missing_section(config):
    assert config.get("database", "url", fallback="sqlite://") == "sqlite://"
    assert config.getint("database", "pool", fallback=5) == 5


def test_fallback_for_missing_option(config):
    assert config.get("server", "timeout", fallback="30") == "30"
    assert config.get("server", "timeout", fallback=None) is None


def test_typed_fallback_for_missing_option(config):
    assert config.getint("server", "workers", fallback=4) == 4
    assert config.getboolean("server", "reload", fallback=True) is True
    assert config["server"].getint("workers", fallback=2) == 2


def test_bad_value_raises_config_value_error(config):
    with pytest.raises(ConfigValueError) as info:
        config.getint("server", "host")
    assert isinstance(info.value, ValueError)
    assert "[server] host" in str(info.value)


def test_parse_errors():
    with pytest.raises(ParseError) as info:
        Config().read_string("[a]\nthis line has no separator\n", source="app.ini")
    assert info.value.lineno == 2 and "app.ini:2" in str(info.value)
    with pytest.raises(ParseError):
        Config().read_string("key = value\n")
    with pytest.raises(DuplicateError):
        Config().read_string("[a]\nx = 1\nx = 2\n")


def test_write_round_trip(config):
    again = Config()
    again.read_string(config.to_string())
    assert again.as_dict(raw=True) == config.as_dict(raw=True)


def test_section_proxy(config):
    server = config["server"]
    server["port"] = "9000"
    assert config.getint("server", "port") == 9000
    assert "host" in server and "nope" not in server
    with pytest.raises(KeyError):
        server["nope"]


def test_load_later_files_override(tmp_path):
    (tmp_path / "base.ini").write_text("[app]\nname = demo\nworkers = 2\n")
    (tmp_path / "local.ini").write_text("[app]\nworkers = 8\n")
    cfg = load(tmp_path / "base.ini", tmp_path / "missing.ini", tmp_path / "local.ini")
    assert cfg.get("app", "name") == "demo"
    assert cfg.getint("app", "workers") == 8
