from appconf.errors import ConfigError
from appconf.settings import SCHEMA, Field, Settings, load_settings

__all__ = ["SCHEMA", "ConfigError", "Field", "Settings", "load_settings"]
