"""Give every watched folder a project of its own, known by host and path.

Before, a folder's project was the one named after its base name: shared by
two folders called ``alpha``, and with a scan's or an upload's ``alpha``. A
project only its folder ever filled becomes that folder's; a shared one
keeps everything it holds, and each of its folders gets a new project named
by its path (the watcher fills it when it next starts).
"""

from collections import Counter

from django.db import migrations
from django.utils.text import slugify


def own_projects(apps, schema_editor):
    WatchedFolder = apps.get_model("watch", "WatchedFolder")
    Project = apps.get_model("web", "Project")
    Transcript = apps.get_model("web", "Transcript")
    ScanJob = apps.get_model("scan", "ScanJob")
    folders = list(WatchedFolder.objects.select_related("project").order_by("pk"))
    per_project = Counter(folder.project_id for folder in folders)
    for folder in folders:
        key = f"{folder.host}:{folder.path}"
        project = folder.project
        alone = (
            not project.watched
            and per_project[project.pk] == 1
            and not ScanJob.objects.filter(project=project).exists()
            # Uploads have no relative path; the watcher's files always do.
            and not Transcript.objects.filter(project=project, relative_path="").exists()
        )
        if alone:
            project.watched = key
            project.save(update_fields=["watched"])
            continue
        name = f"{folder.path.rstrip('/').rpartition('/')[2] or 'watched'} ({folder.path})"[:200]
        base = (slugify(name) or "watched")[:190]
        taken = set(Project.objects.filter(owner_id=folder.owner_id).values_list("slug", flat=True))
        slug = next(s for s in [base, *(f"{base}-{n}" for n in range(2, 10**6))] if s not in taken)
        folder.project = Project.objects.create(
            owner_id=folder.owner_id, name=name, slug=slug, watched=key
        )
        folder.save(update_fields=["project"])


class Migration(migrations.Migration):
    dependencies = [
        ("watch", "0001_initial"),
        ("web", "0003_transcripts_per_project"),
        ("scan", "0001_initial"),
    ]

    operations = [migrations.RunPython(own_projects, migrations.RunPython.noop, elidable=True)]
