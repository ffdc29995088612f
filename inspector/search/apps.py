from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "inspector.search"
    label = "search"
    verbose_name = "Project search"

    def ready(self) -> None:
        # Django's wiring: the web floor sends, search listens (``web/events.py``).
        from inspector.search.signals import queue_indexing
        from inspector.web.events import transcripts_stored

        transcripts_stored.connect(queue_indexing, dispatch_uid="search.queue_indexing")
