from django.apps import AppConfig


class ScanConfig(AppConfig):
    name = "inspector.scan"
    label = "scan"
    verbose_name = "Batch scans"
