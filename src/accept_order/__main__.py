"""`python -m accept_order`: the same command line as the `accept-order` script."""

from .cli import main
from .cli.leave import leave

if __name__ == "__main__":
    try:
        main(prog_name="accept-order")
    except SystemExit as exc:
        leave(exc.code)  # as the script leaves (cli/leave.py): without the interpreter's teardown
    leave(None)
