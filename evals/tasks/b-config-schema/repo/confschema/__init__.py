from confschema.validator import (
    ConfigError,
    Issue,
    SchemaError,
    Validator,
    apply_defaults,
    describe_schema,
    format_path,
    load_config,
    validate,
)

__all__ = ["ConfigError", "Issue", "SchemaError", "Validator", "apply_defaults", "describe_schema", "format_path", "load_config", "validate"]
