"""Prometheus metrics of a broker (``metrics.http.listener``).

* :mod:`.recorder`: plain counters the broker updates on its hot path (requests, topics, flushes,
  cleaner passes), through the ``BrokerMetricsRecorder`` Protocol of :mod:`zurau.broker.interfaces`.
* :mod:`.collector`: everything else is read from the broker's state at scrape time, on its loop.
* :mod:`.http_server`: ``GET /metrics`` on a thread of its own.
* :mod:`.exporter`: the three put together for one broker (wired by :mod:`zurau.app`).

Layering: this package sits between the composition root and the broker (it reads the state of
every layer below); the broker layer sees only the recorder Protocol.
"""
