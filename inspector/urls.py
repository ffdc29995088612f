from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("inspector.web.urls")),
    path("", include("inspector.scan.urls")),
    path("", include("inspector.share.urls")),
    path("", include("inspector.watch.urls")),
    path("", include("inspector.search.urls")),
]

# JSON under /api/, Django's pages elsewhere.
handler400 = "inspector.web.views.bad_request"
handler404 = "inspector.web.views.api_not_found"
handler500 = "inspector.web.views.api_server_error"
