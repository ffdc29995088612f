from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("inspector.web.urls")),
    path("", include("inspector.scan.urls")),
    path("", include("inspector.share.urls")),
    path("", include("inspector.watch.urls")),
]

handler404 = "inspector.web.views.not_found"
