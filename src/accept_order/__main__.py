"""`python -m accept_order`: the same command line as the `accept-order` script."""

from .cli.leave import main_and_leave

if __name__ == "__main__":
    main_and_leave(prog_name="accept-order")
