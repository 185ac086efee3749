"""Security settings: what `manage.py check --deploy` asks for (cookies, HTTPS, HSTS,
headers) and the Content-Security-Policy (django-csp), which adds its app and middleware to
the core's lists."""

from __future__ import annotations

import os

from medhelm_site.settings.core import DEBUG
from medhelm_site.settings.core import INSTALLED_APPS as _CORE_APPS
from medhelm_site.settings.core import MIDDLEWARE as _CORE_MIDDLEWARE
from medhelm_site.settings.env import env_bool, env_list

# Security settings that `check --deploy` asks for; TLS ones can be switched off behind a
# proxy that terminates TLS elsewhere.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0" if DEBUG else "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if env_bool("USE_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SILENCED_SYSTEM_CHECKS = env_list("SILENCED_SYSTEM_CHECKS", "")

# ---- Content-Security-Policy (django-csp) --------------------------------------------------
# Everything from the site itself and nothing inline: no inline <script> or <style>, no style
# attributes, no event-handler attributes (the pages' JavaScript and CSS are static files).
# Self-contained documents (the Delphi HTML report, the stored SVG figures) carry a policy of
# their own built from their bytes (medhelm_site.csp). Kept in its own block on purpose.
INSTALLED_APPS = [*_CORE_APPS, "csp"]
_security = _CORE_MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1
MIDDLEWARE = [
    *_CORE_MIDDLEWARE[:_security],
    "csp.middleware.CSPMiddleware",
    *_CORE_MIDDLEWARE[_security:],
]
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
# ---- end Content-Security-Policy ----------------------------------------------------------
