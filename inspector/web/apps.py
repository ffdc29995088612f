from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "inspector.web"
    label = "web"
    verbose_name = "Transcript Inspector"

    def ready(self) -> None:
        from inspector.web import signals  # noqa: F401  (connects the receivers)
