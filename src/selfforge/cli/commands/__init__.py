"""CLI command modules; each defines ``register(app)`` and is listed in cli.COMMAND_MODULES."""
