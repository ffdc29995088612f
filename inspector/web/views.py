from __future__ import annotations

from django.contrib.auth import get_user_model, login
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from inspector.web.signin import signin_tokens


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "inspector/home.html")


@never_cache
@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """200 when the database answers a query, 503 otherwise (for load balancers)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # any database failure means unhealthy
        return JsonResponse({"status": "error", "database": type(error).__name__}, status=503)
    return JsonResponse({"status": "ok", "database": connection.vendor})


def _user_from_uid(uidb64: str):  # -> User | None
    User = get_user_model()
    try:
        pk = force_str(urlsafe_base64_decode(uidb64))
        return User.objects.get(pk=pk)
    except (ValueError, TypeError, OverflowError, User.DoesNotExist):
        return None


@never_cache
@require_http_methods(["GET", "POST"])
def signin_link(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """A one-time link signs in on POST; GET only shows the button.

    Mail scanners and link previews fetch URLs with GET; if GET signed in,
    they would burn the single use before the person clicks.
    """
    user = _user_from_uid(uidb64)
    valid = user is not None and user.is_active and signin_tokens.check_token(user, token)
    if not valid:
        return render(request, "registration/signin_link.html", {"valid": False}, status=400)
    if request.method == "POST":
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("home")
    return render(request, "registration/signin_link.html", {"valid": True, "account": user})
