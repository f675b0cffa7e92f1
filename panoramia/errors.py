"""Errors that the CLI turns into one line on stderr and exit status 2."""


class InputError(ValueError):
    """Bad user input (file, column, values, option). The message names the input at fault."""
