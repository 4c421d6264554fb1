"""customobj/_cli_errors.py: the command line's error types, one-line messages and the held stderr."""
import os

import pytest

from customobj import cli
from customobj._cli_errors import RunError, UsageError, one_line, stderr_held


def test_the_cli_and_its_commands_share_one_set_of_error_types():
    assert cli.UsageError is UsageError and cli.RunError is RunError
    assert issubclass(UsageError, ValueError) and issubclass(RunError, RuntimeError)


@pytest.mark.parametrize("text, line", [
    ("one", "one"),
    ("bad input\n  second line\n\n", "bad input; second line"),
    ("", "(no message)"),
    ("\n \n", "(no message)"),
    (ValueError("x\ny"), "x; y"),
])
def test_one_line(text, line):
    assert one_line(text) == line


def test_stderr_held_replays_on_success_and_drops_on_failure(capfd):
    with stderr_held():
        os.write(2, b"a native warning\n")
    assert capfd.readouterr().err == "a native warning\n"
    with pytest.raises(RuntimeError):
        with stderr_held():
            os.write(2, b"[LightGBM] [Fatal] the same text as the exception\n")
            raise RuntimeError("boom")
    assert capfd.readouterr().err == ""
