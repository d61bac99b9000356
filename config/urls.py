from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import path, re_path
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from api.endpoints import api
from blogpublish.views import site, story_preview
from publishing.dashboard import dashboard, dashboard_requeue
from publishing.dashboard import unavailable as dashboard_unavailable
from publishing.views import healthz, metrics, status_json, without_database


@csrf_exempt
def api_not_found(request: HttpRequest) -> JsonResponse:
    """A 404 in the API's shape for an address the API does not have, whatever the
    method; one ending in a slash is told the API's addresses have none."""
    detail = f"The API has no address {request.path}"
    if request.path.endswith("/") and request.path.strip("/") != "api":
        detail += f": its addresses end without a slash ({request.path.rstrip('/')})"
    return JsonResponse({"detail": f"{detail}.", "errors": {}}, status=404)


urlpatterns = [
    # Before admin.site.urls, whose catch-all would take these; admin_view sends
    # anonymous users to the login page and lets only staff in.
    path(
        "admin/publishing/dashboard/",
        # Outside admin_view, whose check of the user reads the database too: without
        # it, Django's bare 500 page (a review's finding).
        without_database(dashboard_unavailable)(admin.site.admin_view(dashboard)),
        name="publishing-dashboard",
    ),
    path(
        "admin/publishing/dashboard/requeue/",
        without_database(dashboard_unavailable)(admin.site.admin_view(dashboard_requeue)),
        name="publishing-dashboard-requeue",
    ),
    path("admin/", admin.site.urls),
    # The HTTP API (docs/api.md), before the blog's catch-all.
    path("api/", api.urls),
    # Any other address under /api/: the API's JSON 404, not the blog's catch-all (a
    # POST to `/api/articles/`, slash and all, got the site's CSRF page: a review's).
    re_path(r"^api(?:/.*)?$", api_not_found),
    path("healthz", healthz, name="healthz"),
    path("status.json", status_json, name="status-json"),
    path("metrics", metrics, name="metrics"),
    # A draft's shared preview (docs/writing.md); no page of the site has this address
    # (a slug's folder holds only index.html).
    path("preview/<str:token>/", story_preview, name="story-preview"),
    # The blog itself: SITE_ROOT, as the static site builder wrote it.
    re_path(r"^(?P<path>.*)$", site, name="site"),
]


def bad_request(request, exception):
    """A 400 Django answers itself (a Host header it refuses, a request it cannot read):
    JSON in the API's own shape under /api/, so a client gets what the API documents
    (schemathesis found an HTML page there); Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Bad request.", "errors": {}}, status=400)
    return defaults.bad_request(request, exception)


handler400 = bad_request
