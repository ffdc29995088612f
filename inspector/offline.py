"""The web's exports with no server: ``transcript-inspector report --html`` and ``--markdown``.

The console (``inspector.cli``) runs on the pure core, without Django; these two
outputs are the web's own (the one-file timeline of ``web.export.page_html``, the
Markdown of ``web.export.markdown``), so they need its templates, template tags
and static files. ``cli`` loads this module by name only when one is asked for,
and it starts Django here on the project's settings with nothing to keep: a
throwaway secret key and a temporary ``var/`` (no database is opened, nothing
is written), unless the environment already says otherwise.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import tempfile
from typing import Any

_READY = False


def _setup() -> None:
    global _READY
    if _READY:
        return
    import django
    from django.apps import apps

    if not apps.ready:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inspector.settings")
        os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
        if "INSPECTOR_VAR_DIR" not in os.environ:
            var = tempfile.mkdtemp(prefix="transcript-inspector-")
            atexit.register(shutil.rmtree, var, True)
            os.environ["INSPECTOR_VAR_DIR"] = var
        django.setup()
    _READY = True


def html(diagnosis: Any, name: str, redacted: bool) -> str:
    """The one-file timeline of ``diagnosis`` (the page's and a share's download)."""
    _setup()
    from inspector.web import export

    first_prompt = str(diagnosis.meta.get("first_prompt") or "")
    return export.page_html(diagnosis, name, first_prompt, redacted)


def markdown(report: dict[str, Any], name: str) -> str:
    """The Markdown of ``report`` (``diagnosis.report_from``'s), as the page's download."""
    _setup()
    from inspector.web import export
    from inspector.web.templatetags.inspector_tags import provider_label

    return export.markdown(name, report, provider_label)
