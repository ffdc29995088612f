from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "inspector.search"
    label = "search"
    verbose_name = "Project search"
