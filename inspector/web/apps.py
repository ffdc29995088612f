from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "inspector.web"
    label = "web"
    verbose_name = "Transcript Inspector"

    def ready(self) -> None:
        # Imported for what importing does: registering the check, connecting the receivers.
        from inspector.web import checks, signals  # noqa: F401
