"""The user's own machine: where agents keep their sessions, and fixing one in place.

No Django: the console command ``transcript-inspector`` runs on this and the
pure core alone, without a server or a database.

- ``agents``: each agent whose sessions we read, where it keeps them and how
  it resumes one;
- ``sessions``: finding those sessions and diagnosing them;
- ``fix``: repairing one session file in place, safely, and undoing that;
- ``confine``: where ``fix`` and ``undo`` may write (the session's own store
  and its backup folder), the one place every path they write is checked.
"""
