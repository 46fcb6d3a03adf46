from minitpl.engine import (
    Environment,
    Markup,
    StrictUndefined,
    Template,
    TemplateError,
    TemplateNotFound,
    TemplateSyntaxError,
    Undefined,
    UndefinedError,
    escape,
)

__all__ = [
    "Environment",
    "Markup",
    "StrictUndefined",
    "Template",
    "TemplateError",
    "TemplateNotFound",
    "TemplateSyntaxError",
    "Undefined",
    "UndefinedError",
    "escape",
]
