from django.urls import path

from inspector.scan import views

app_name = "scan"

urlpatterns = [
    path("p/", views.project_list, name="project_list"),
    path("p/<slug:slug>/", views.project_detail, name="project"),
    path("p/<slug:slug>/sessions.csv", views.project_csv, name="project_csv"),
    path("p/<slug:slug>/repaired.zip", views.project_zip, name="project_zip"),
    path("scan/", views.scan_new, name="new"),
    path("scan/<str:public_id>/", views.job_detail, name="job"),
    path("scan/<str:public_id>/retry/", views.job_retry, name="retry"),
]
