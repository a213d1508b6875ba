"""A share consumer process for the kill tests: joins share group ``argv[2]`` on topic
``argv[3]`` at ``argv[1]``, polls until it holds records, prints their offsets as one JSON line
and then sleeps without acknowledging (explicit mode) until it is killed."""

from __future__ import annotations

import json
import sys
import time

from confluent_kafka import ShareConsumer


def main() -> None:
    bootstrap, group, topic = sys.argv[1:4]
    c = ShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    )
    c.subscribe([topic])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        msgs = [m for m in c.poll(0.5) if m.error() is None]
        if msgs:
            print(json.dumps([m.offset() for m in msgs]), flush=True)
            time.sleep(3600)
    sys.exit(1)


if __name__ == "__main__":
    main()
