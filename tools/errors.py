"""The error that stagec's command-line tools raise for a mistake in what the user gave.

It is shared so that every tool (stagec-opt, stagec) and every helper they call
(pipeline_spec, diagnostics) can raise it, and each tool's main can report it the
same way: one message on stderr, exit code 2, no traceback.
"""


class UsageError(Exception):
    """An error in what the user gave (command line, pipeline text, input file):
    printed as one message; exit code 2."""
