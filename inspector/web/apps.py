from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "inspector.web"
    label = "web"
    verbose_name = "Transcript Inspector"
