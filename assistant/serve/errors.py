"""What a client is told when a request fails: OpenAI's error shape, with the status that says whose move it is."""

from __future__ import annotations

import logging
from typing import Any

from fastapi.responses import JSONResponse

from assistant.errors import AssistantError, IndexNotFoundError, QuestionError, StoreDamagedError

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error for the client, in OpenAI's shape: HTTP status, a message, its type and the field at fault."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error", param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.param, self.code = status, message, kind, param, code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if self.status == 401 else None
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


def from_engine(exc: Exception) -> ApiError:
    """An engine failure as the client should see it: what to change (400), what is missing (404), or a message (500)."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, QuestionError):
        return ApiError(400, str(exc), param="messages")
    if isinstance(exc, StoreDamagedError):
        return ApiError(503, str(exc), kind="server_error", code="store_damaged")
    if isinstance(exc, IndexNotFoundError):
        return ApiError(404, str(exc), param="model", code="model_not_found")
    if isinstance(exc, AssistantError):
        return ApiError(500, str(exc), kind="server_error")
    log.exception("unexpected error while answering", exc_info=exc)
    return ApiError(500, "The assistant failed while answering; the error was logged.", kind="server_error")
