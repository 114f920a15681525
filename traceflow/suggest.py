"""Suggestions for a mistyped name: ``no such command 'flow' (did you mean 'flows'?)``."""
import difflib


def did_you_mean(word, choices):
    """`` (did you mean 'X'?)`` for the choice closest to ``word`` (difflib's ratio at least
    0.6), or ``""`` when none is close."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
