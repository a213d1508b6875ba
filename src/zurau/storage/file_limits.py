"""The process's open-file limit, as the log needs it (``RLIMIT_NOFILE``).

Every segment of every partition keeps its ``.log`` file open (reads and ``sendfile`` use the
descriptor), so 10,000 partitions need at least 10,000 descriptors besides the sockets; index
append descriptors are bounded separately (``abstract_index.max_open_writers``).

:func:`raise_open_files_limit` lifts the soft limit to the hard one, as the JVM does for Kafka on
Linux (``-XX:+MaxFDLimit``, on by default); :func:`check_open_files` warns, naming ``ulimit -n``,
when the descriptors the logs hold come near the limit, before ``open`` starts failing with
EMFILE (which the broker reports as a storage error of the partition being opened).
"""

from __future__ import annotations

import logging
import resource

log = logging.getLogger("zurau.storage")

#: Warn when the logs hold more than this share of the soft limit.
WARN_SHARE = 0.8


def raise_open_files_limit() -> int:
    """Lift the soft ``RLIMIT_NOFILE`` to the hard limit (where allowed); return the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # e.g. a hard limit the kernel caps lower (nr_open)
            pass
    return soft


def check_open_files(held: int) -> bool:
    """Warn if ``held`` descriptors (segment files) are near the soft limit; False if so."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or held <= soft * WARN_SHARE:
        return True
    log.warning(
        "the logs hold %d open segment files, near the open-file limit of %d: raise it "
        "(ulimit -n, or LimitNOFILE= for systemd) or new partitions and segments will fail to open",
        held,
        soft,
    )
    return False
