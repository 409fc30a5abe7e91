"""`python -m accept_order`: the same command line as the `accept-order` script."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="accept-order")
