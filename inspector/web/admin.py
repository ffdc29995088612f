from django.contrib import admin

from inspector.web.models import ApiToken, Project, Transcript


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "owner", "created")
    search_fields = ("name", "slug")


@admin.register(Transcript)
class TranscriptAdmin(admin.ModelAdmin):
    list_display = ("file_name", "public_id", "owner", "format", "message_count", "needs_repair")
    list_filter = ("format", "needs_repair")
    search_fields = ("file_name", "public_id", "sha256")
    readonly_fields = ("public_id", "sha256", "size", "engine_version", "created")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "hint", "user", "created", "last_used")
    readonly_fields = ("token_hash", "hint", "created", "last_used")
