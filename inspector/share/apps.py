from django.apps import AppConfig


class ShareConfig(AppConfig):
    name = "inspector.share"
    label = "share"
    verbose_name = "Share links"
