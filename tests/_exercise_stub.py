"""What every check test feeds a check as the untouched exercise: the stub, and what it must say."""

STUB_MESSAGE = r"still raises NotImplementedError"


def stub(*args):
    """Behaves like a generated exercise before the student has written anything."""
    raise NotImplementedError("Exercise: write your answer here")
