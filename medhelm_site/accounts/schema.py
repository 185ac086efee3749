"""How the OpenAPI schema describes the API token (drf-spectacular)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "medhelm_site.accounts.auth.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": 'An API token (POST /api/auth/login/), sent as "Token <secret>".',
        }
