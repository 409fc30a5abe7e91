"""What owns processes or descriptors is a context manager that ends them on every way out. `Started` also
starts them on entry, and a start that fails part-way ends what it had started before the error goes on
(the worker pool, a launched or attached server, the load generator); `Closing` only closes (probes that
open as they are made)."""

from __future__ import annotations

from types import TracebackType
from typing import ClassVar, Self


class Started:
    """`with X(...) as x:` runs `x.start()`, and `x.close()` on the way out, whatever happened; a start that
    raises is closed at once (nothing it had started is left behind). Subclasses define both."""

    # Something has begun to start processes since the command's body began (the command line clears it there):
    # an owner entered, a child forked (core/processes.start_child) or a server's master launched. Before that an
    # interrupted command has no workers to say it stopped.
    begun: ClassVar[bool] = False

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        Started.begun = True
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Closing:
    """`with X(...) as x:` runs `x.close()` on the way out, whatever happened. Subclasses define `close`."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
