"""The user's own machine: where agents keep their sessions, and fixing one in place.

No Django: the console command ``transcript-inspector`` runs on this and the
pure core alone, without a server or a database.

Floors, each importing only those below it (``tests/test_layers.py`` holds them):

- ``confine``: where a fix may write (the session's own store and its backup
  folder), the one place every path written is checked; ``follow``: reading
  only what was appended to a file;
- ``agents``: each agent whose sessions we read, where it keeps them, how it
  resumes one, and which store kinds hold them (``Agent.store``);
- ``outcome``: what a check and a fix report (``Checked``, ``Outcome``) and
  the proof a repair holds (``verify``), from bytes, reading nothing;
- ``store``: ``LocalStore``, the base of a store kind with its named hooks
  (list, read, confine, fix, undo), itself the one-session-one-file kind;
- ``files``: a session kept as several files, fixed file by file (the
  backup set and its note, each file replaced in one step, read back, undone),
  for the kinds of files below;
- ``opencode``, ``opencode_db``: OpenCode's folder of record files and its
  database, each a ``LocalStore`` kind;
- ``rowdb``: ``RowDatabase``, the kind for a session kept as message rows of
  an agent's SQLite database (fix in one transaction, undo), on which
  ``goose_db`` (Goose's ``sessions.db``) and ``hermes_db`` (Hermes's
  ``state.db``) state only their rows, ``q_db`` (Amazon Q's and Kiro CLI's
  ``data.sqlite3``) its one conversation row, and ``opencode_v2`` (OpenCode's
  event-sourced sessions: ``event`` rows and the ``session_message`` rows
  projected from them) its events; ``openhands``: OpenHands' event files;
- ``openhands_cli``: the OpenHands CLI's conversations (the V1 SDK's event
  files and ``base_state.json``), written file by file through ``files``;
- ``stores``: the registry of store kinds by ``Agent.store``;
- ``sessions``: finding sessions and diagnosing them; ``fix``: repairing one
  in place, safely, and undoing that. Both ask ``stores`` and name no kind;
  ``databases``: an agent's database handed over whole (an upload, a zip's
  member), recognised by its tables and read from a private read-only copy.
"""
