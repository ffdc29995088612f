from django.contrib.auth import views as auth_views
from django.urls import path

from inspector.web import machine, views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("signin/<str:uidb64>/<str:token>/", views.signin_link, name="signin_link"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("upload/", views.upload, name="upload"),
    path("t/", views.transcript_list, name="transcript_list"),
    path("machine/", machine.machine_sessions, name="machine"),
    path("machine/open/", machine.machine_open, name="machine_open"),
    path("t/<str:public_id>/", views.timeline, name="timeline"),
    path("t/<str:public_id>/search/", views.transcript_search, name="transcript_search"),
    path("t/<str:public_id>/download/<str:kind>/", views.download, name="download"),
    path("t/<str:public_id>/delete/", views.delete, name="delete"),
    path("rules/", views.rule_list, name="rule_list"),
    path("rules/<str:rule_id>/", views.rule_detail, name="rule"),
    path("spec/", views.spec_page, name="spec"),
    path("spec/seeds/<str:name>", views.spec_seed, name="spec_seed"),
    path("account/", views.account, name="account"),
    path("account/tokens/", views.token_create, name="token_create"),
    path("account/tokens/<str:public_id>/revoke/", views.token_revoke, name="token_revoke"),
    path("api/transcripts", views.api_upload, name="api_upload"),
    path("api/transcripts/<str:public_id>", views.api_transcript, name="api_transcript"),
]
