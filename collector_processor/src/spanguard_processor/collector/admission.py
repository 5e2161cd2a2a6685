"""Admission before work: back-pressure shared by both receivers of one process.

At most ``max_pending_spans`` spans may be decoding or waiting for the store. A request
reserves its spans *before* it is decoded (:meth:`Admission.admit`) — first an estimate from
its size, then (:meth:`Admission.resize`) the exact count read from the wire format
(:func:`~spanguard_processor.ingest.otlp_columns.count_spans`), then what decoding kept. What
does not fit is refused at once with :class:`Overloaded` — HTTP 429 with ``Retry-After``, gRPC
``RESOURCE_EXHAUSTED`` — instead of being decoded or queued without bound; a request carrying
more spans than ``max_pending_spans`` could never fit and is refused with :class:`TooLarge`
(HTTP 413, gRPC ``RESOURCE_EXHAUSTED``). The reservation passes to the store's future
(:meth:`Admission.hold`) and is given back once the spans are stored or refused.

While a large request (an estimate of ``LARGE_REQUEST_SPANS`` spans or more, e.g. a 1 MiB
protobuf body) is admitted, the GIL passes between threads every 1 ms instead of CPython's
5 ms, so the thread decoding or storing it delays ``/health`` and refusals on the event loop by
less; with only small requests in flight the 5 ms interval stays, since every switch costs both
threads CPU (about 10 % of the processor's CPU per span at 1 ms, bench/bench_ingest.py).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from .limits import Limits

__all__ = ["LARGE_REQUEST_SPANS", "Admission", "Overloaded", "Reservation", "TooLarge"]

LARGE_REQUEST_SPANS = 16_384
_SWITCH_LARGE = 0.001  # seconds: sys.setswitchinterval while a large request is in flight
_SWITCH_SMALL = 0.005  # CPython's default


class Overloaded(Exception):
    """Too many spans are waiting for the store; the client should retry after a pause."""


class TooLarge(Exception):
    """One request carries more spans than may ever be pending; it must be sent smaller."""


@dataclass(eq=False, slots=True)
class Reservation:
    """Spans one request holds against ``max_pending_spans`` until it is stored or refused."""

    spans: int
    released: bool = False
    owned: bool = False  # handed to a store future, which releases it
    large: bool = False  # admitted as a large request (the GIL switches faster meanwhile)


class Admission:
    """The spans reserved by requests in progress, against ``limits.max_pending_spans``."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits if limits is not None else Limits()
        self.pending = 0
        self._large = 0  # large requests admitted and not yet released
        self._lock = threading.Lock()

    def admit(self, estimate: int) -> Reservation:
        """Reserve room for a request before decoding it, from an estimate of its spans.

        An estimate above ``max_pending_spans`` reserves all of it (the exact count decides
        later), so a large request is decoded only when nothing else is pending.
        """
        spans = max(1, min(estimate, self.limits.max_pending_spans))
        with self._lock:
            if self.pending + spans > self.limits.max_pending_spans:
                raise Overloaded(self.busy())
            self.pending += spans
            large = estimate >= LARGE_REQUEST_SPANS
            if large:
                self._large += 1
                if self._large == 1:
                    sys.setswitchinterval(_SWITCH_LARGE)
        return Reservation(spans, large=large)

    def fits(self, estimate: int) -> bool:
        """Whether :meth:`admit` would admit ``estimate`` spans now (nothing is reserved)."""
        spans = max(1, min(estimate, self.limits.max_pending_spans))
        return self.pending + spans <= self.limits.max_pending_spans

    def busy(self) -> str:
        """Why a request is refused as overloaded."""
        return (
            f"{self.pending} spans are being decoded or waiting for the store; retry in "
            f"{self.limits.retry_after} s."
        )

    def resize(self, reservation: Reservation, spans: int) -> None:
        """Hold ``spans`` (an exact count) instead of the estimate; refuses what cannot fit."""
        limit = self.limits.max_pending_spans
        if spans > limit:
            raise TooLarge(
                f"the request carries more than {limit} spans, the most one request "
                "may carry (the processor's max_pending_spans limit); send smaller "
                "batches."
            )
        with self._lock:
            if reservation.released:
                raise RuntimeError("the reservation was released")
            grow = spans - reservation.spans
            if grow > 0 and self.pending + grow > limit:
                raise Overloaded(self.busy())
            self.pending += grow
            reservation.spans = spans

    def release(self, reservation: Reservation) -> None:
        """Give the reservation back (idempotent)."""
        with self._lock:
            if not reservation.released:
                reservation.released = True
                self.pending -= reservation.spans
                if reservation.large:
                    self._large -= 1
                    if not self._large:
                        sys.setswitchinterval(_SWITCH_SMALL)

    def hold(self, send: Callable[[], Future[None]], reservation: Reservation) -> Future[None]:
        """Call ``send`` (which queues the reserved spans); the reservation is released when
        the returned future is done (stored or failed) or when ``send`` raises."""
        try:
            future = send()
        except BaseException:
            self.release(reservation)
            raise
        reservation.owned = True
        future.add_done_callback(lambda _: self.release(reservation))
        return future
