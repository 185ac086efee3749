"""A sign-in through the test OpenID provider without a browser: Django's test client plays
our site, a requests session plays the browser at the provider (its login form, then the
authorization endpoint), and the provider's answer comes back to our callback."""

from __future__ import annotations

import html
import re
from urllib.parse import urljoin, urlsplit

import requests
from django.test import Client

CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
NEXT_FIELD = re.compile(r'name="next" value="([^"]*)"')


def _at_provider(url: str, provider_url: str) -> bool:
    return url.startswith(provider_url)


def sign_in(client: Client, *, provider_url: str, username: str, password: str):
    """Start a sign-in on our site, log in at the provider as `username`, and hand the
    provider's answer to our callback; the callback's response."""
    start = client.get("/accounts/sso/start/")
    assert start.status_code == 302, start
    browser = requests.Session()
    url = start["Location"]
    logged_in = False
    for _ in range(10):
        if not _at_provider(url, provider_url):
            break
        response = browser.get(url, allow_redirects=False, timeout=10)
        if response.status_code == 200 and not logged_in:
            token = CSRF_FIELD.search(response.text)
            assert token is not None, response.text[:500]
            response = browser.post(
                response.url,
                data={
                    "csrfmiddlewaretoken": token.group(1),
                    "username": username,
                    "password": password,
                    "next": html.unescape(NEXT_FIELD.search(response.text).group(1)),
                },
                allow_redirects=False,
                timeout=10,
            )
            logged_in = True
        assert response.status_code == 302, (response.status_code, response.text[:500])
        url = urljoin(response.url, response.headers["Location"])
    else:
        raise AssertionError(f"the provider kept redirecting: {url}")
    callback = urlsplit(url)
    assert callback.path == "/accounts/sso/callback/", url
    return client.get(f"{callback.path}?{callback.query}")
