"""`selfforge serve`: a read-only web dashboard over the journal (the `web` extra)."""

INSTALL_HINT = "the dashboard needs the web extra: pip install 'selfforge[web]'"
