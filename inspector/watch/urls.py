from django.urls import path

from inspector.watch import views

app_name = "watch"

urlpatterns = [
    path("p/<slug:slug>/watched/", views.panel, name="panel"),
    path("p/<slug:slug>/watched/<int:row_id>/repair/", views.repair_in_place, name="repair"),
]
