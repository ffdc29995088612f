from django.apps import AppConfig


class WatchConfig(AppConfig):
    name = "inspector.watch"
    label = "watch"
    verbose_name = "Watched folders"
