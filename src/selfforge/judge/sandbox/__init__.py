"""Running a check's commands in bubblewrap: the policy, home by allowlist, the check's
git, limits, quota, build caches, setup, and the command runner every check goes through.

The runner adapters (``judge/runners/``) and the rules (``judge/rules/``) never import
the stages; this layer imports the adapters (a command is prepared by its runner).
"""
