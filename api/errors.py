"""Every error leaves in the contract's shape: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

from flask import jsonify
from marshmallow import ValidationError
from werkzeug.exceptions import HTTPException

from engine import RuleError

_HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 413: "bad_request", 415: "bad_request"}


def error_response(code: str, message: str, status: int, details: dict | None = None):
    body = {"error": {"code": code, "message": message, "details": details or {}}}
    return jsonify(body), status


def install(app) -> None:
    @app.errorhandler(RuleError)
    def rule_error(e: RuleError):
        return error_response(e.code, e.message, e.status, e.details)

    @app.errorhandler(ValidationError)
    def validation_error(e: ValidationError):
        details = e.messages if isinstance(e.messages, dict) else {"body": e.messages}
        fields_ = ", ".join(sorted(details))
        return error_response("bad_request", f"Invalid request: check {fields_}.", 400, details)

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException):
        status = e.code or 500
        message = "The request body is larger than 16 KB." if status == 413 else e.description
        return error_response(_HTTP_CODES.get(status, "error"), message, status)

    @app.errorhandler(Exception)
    def unexpected(e: Exception):
        app.logger.exception("unhandled error")
        return error_response("internal", "Something went wrong on our side.", 500)
