"""A requests session logged in to the admin of a live server (pytest-django's
live_server), for tests that must go through real HTTP: the session cookie of a forced
login and the CSRF token the admin's pages hand out."""

from __future__ import annotations

import requests
from django.test import Client

ADD_PAGE = "/admin/publishing/article/add/"


def admin_session(base_url: str, user) -> requests.Session:
    """A session for `user` at `base_url` that sends the CSRF token with every request
    (the rows behind the login must be committed: django_db(transaction=True))."""
    client = Client()
    client.force_login(user)
    session = requests.Session()
    session.cookies.set("sessionid", client.cookies["sessionid"].value)
    page = session.get(base_url + ADD_PAGE, timeout=30)
    page.raise_for_status()
    token = session.cookies["csrftoken"]
    # Set again for every host: cookielib keeps a cookie of "localhost" (live_server's
    # host) as "localhost.local" and would not send it back.
    session.cookies.clear()
    session.cookies.set("sessionid", client.cookies["sessionid"].value)
    session.cookies.set("csrftoken", token)
    session.headers["X-CSRFToken"] = token
    return session
