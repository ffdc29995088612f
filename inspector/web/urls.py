from django.contrib.auth import views as auth_views
from django.urls import path

from inspector.web import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("signin/<str:uidb64>/<str:token>/", views.signin_link, name="signin_link"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
