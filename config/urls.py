from __future__ import annotations

from django.contrib import admin
from django.urls import path, re_path

from blogpublish.views import site

urlpatterns = [
    path("admin/", admin.site.urls),
    # The blog itself: SITE_ROOT, as the static site builder wrote it.
    re_path(r"^(?P<path>.*)$", site, name="site"),
]
