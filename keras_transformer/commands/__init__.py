"""Subcommands of `keras-transformer`, one module each with `register(subparsers)`."""
