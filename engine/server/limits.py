"""The request limits of one server; each one answers with its own 4xx/503 in OpenAI's error shape."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ServerLimits(BaseModel):
    """Request limits; each one answers with its own 4xx/503 in OpenAI's error shape."""

    max_prompt_tokens: int | None = Field(
        default=None, ge=1, description="longest prompt, in tokens (None: the model's context length)")
    max_tokens: int = Field(
        default=4096, ge=1, description="largest max_tokens a request may ask (the cap when it sets none)")
    max_waiting: int = Field(
        default=256, ge=0, description="requests allowed to wait beyond one running batch")
    max_body_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="largest request body, in bytes")
