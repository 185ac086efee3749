"""One mapping from domain errors to responses, for the API and for pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import defaults
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from medhelm_site.common.errors import DomainError


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus: a DomainError is a 400 whose body names the field. Anything
    else DRF does not know stays an exception, so Django logs it and answers 500."""
    if isinstance(exc, DomainError):
        return Response(exc.as_dict(), status=400)
    return drf_exception_handler(exc, context)


def add_to_form(form: forms.Form, error: DomainError) -> None:
    """Show a domain error on the form: on its field when the form has one by that name,
    else as a form-wide error that names the field (e.g. "criteria[1].scale: ...")."""
    if error.field in form.fields:
        form.add_error(error.field, error.message)
    elif error.field:
        form.add_error(None, f"{error.field}: {error.message}")
    else:
        form.add_error(None, error.message)


def bad_request_page(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The site's 400 page (handler400). A domain error a view let through (such as a
    BadParameter: `?membership=abc`) shows its message, which is written for the user;
    any other bad request keeps Django's page, which says nothing about it."""
    if isinstance(exception, DomainError):
        return render(
            request,
            "registration/message.html",
            {"title": "Bad request", "message": exception.message},
            status=400,
        )
    return defaults.bad_request(request, exception)
