from django.apps import AppConfig


class ScanConfig(AppConfig):
    name = "inspector.scan"
    label = "scan"
    verbose_name = "Batch scans"

    def ready(self) -> None:
        # Django's wiring: the web floor's timeline asks, the scan answers (``web/events.py``).
        from inspector.scan.reports import timeline_neighbours
        from inspector.web.events import timeline_shown

        timeline_shown.connect(timeline_neighbours, dispatch_uid="scan.timeline_neighbours")
