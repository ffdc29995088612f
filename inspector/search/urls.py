from django.urls import path

from inspector.search import views

app_name = "search"

urlpatterns = [
    path("p/<slug:slug>/search/", views.project_search, name="project"),
]
