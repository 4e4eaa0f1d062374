"""`selfforge serve`: a read-only web dashboard over the journal (the `web` extra).

May import roles, journal and the parts below them; imported by cli/ alone.
"""

INSTALL_HINT = "the dashboard needs the web extra: pip install 'selfforge[web]'"
