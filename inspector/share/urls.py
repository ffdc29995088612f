from django.urls import path

from inspector.share import views

urlpatterns = [
    path("t/<str:public_id>/share/", views.share_panel, name="share_panel"),
    path(
        "t/<str:public_id>/share/<str:link_id>/revoke/",
        views.share_revoke,
        name="share_revoke",
    ),
    # Anything after /s/ reaches the views, so a malformed token gets the same
    # 404 page as an unknown one instead of the resolver's.
    path("s/<str:token>/", views.shared_timeline, name="shared_timeline"),
    path("s/<str:token>/download/<str:kind>/", views.shared_download, name="shared_download"),
]
