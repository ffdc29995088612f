# The row's number as the timeline gives it (issue 31: one row numbering everywhere).
# A nullable column is added in place on SQLite too (ALTER TABLE ... ADD COLUMN, no
# copy of the table), so the FTS5 triggers of 0002 stay as they are. Entries indexed
# before it hold null until their transcript is indexed again (ENGINE_VERSION 10 makes
# every transcript stale, so each search's catch_up and manage.py search_index do it).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("search", "0002_fulltext_index")]

    operations = [
        migrations.AddField(
            model_name="searchrow",
            name="message",
            field=models.PositiveIntegerField(
                help_text=(
                    "the row's message in the file, from 1; 0 for a row the repair inserted; "
                    "null in an entry indexed before it was kept"
                ),
                null=True,
            ),
        ),
    ]
