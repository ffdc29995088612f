from django.contrib import admin

from inspector.scan.models import ScanFile, ScanJob


@admin.register(ScanJob)
class ScanJobAdmin(admin.ModelAdmin):
    list_display = ("public_id", "project", "owner", "source", "status", "done", "total", "created")
    list_filter = ("status", "source")
    search_fields = ("public_id", "label")
    readonly_fields = ("public_id", "created", "finished")


@admin.register(ScanFile)
class ScanFileAdmin(admin.ModelAdmin):
    list_display = ("path", "job", "status", "size")
    list_filter = ("status",)
    search_fields = ("path", "sha256")
    raw_id_fields = ("job", "project", "transcript")
