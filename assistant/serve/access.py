"""Who may use the machine-facing routes: a Bearer token from API_KEYS, compared in constant time."""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import Request

from assistant.serve.errors import ApiError


def is_key(secret: str, keys: list[str]) -> bool:
    """Whether `secret` is one of `keys`, compared in constant time."""
    return any(hmac.compare_digest(secret.encode(), key.encode()) for key in keys)


def key_accepted(authorization: str, keys: list[str]) -> bool:
    """Whether an `Authorization` header carries one of `keys` as a Bearer token (any header does when none are set)."""
    if not keys:
        return True
    scheme, _, token = authorization.partition(" ")
    return scheme.lower() == "bearer" and is_key(token.strip(), keys)


WRONG_KEY = ApiError(401, "Missing or wrong API key: send `Authorization: Bearer <key>` with one of API_KEYS.", kind="authentication_error",
                     code="invalid_api_key")


def require_key(keys: list[str]) -> Any:
    """A dependency admitting requests that carry one of `keys` as a Bearer token (all requests when none are set)."""

    def check(request: Request) -> None:
        if not key_accepted(request.headers.get("authorization", ""), keys):
            raise WRONG_KEY

    return check
