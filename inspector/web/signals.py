"""What follows a row's deletion: its stored files go too. Connected in ``apps.WebConfig.ready``.

Kept out of ``models`` so that the models import nothing of ``store`` (which
imports the models).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from inspector.web.models import Transcript
from inspector.web.store import delete_files


@receiver(post_delete, sender=Transcript)
def delete_stored_files(sender: type[Transcript], instance: Transcript, **kwargs: object) -> None:
    # Runs for queryset deletes too. After commit, so a rolled-back delete keeps its bytes.
    directory = instance.storage_dir
    transaction.on_commit(lambda: delete_files(directory))
