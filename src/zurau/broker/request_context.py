"""What a handler knows: the request's header and peer, and the broker's services.

Handlers never see the whole broker. :class:`BrokerServices` (built once by the composition root,
:mod:`zurau.app`) carries exactly what handlers may use: the replica manager (the only door to
partition logs), the current metadata image, the group and transaction coordinators, the
controller channel (every metadata change goes through it), the clock, and this node's identity
and configuration. Each is typed by the small Protocol it must satisfy, so a test or the
simulation can hand a handler its own pieces.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zurau.protocol.frame import RequestHeader

if TYPE_CHECKING:
    from zurau.broker.auth.authorizer import StandardAuthorizer
    from zurau.broker.auth.session import SecuritySession
    from zurau.broker.client_metrics_manager import ClientMetricsManager
    from zurau.broker.fetch_session import FetchSessionCache
    from zurau.broker.interfaces import (
        BrokerMetricsRecorder,
        ControllerChannel,
        MetadataView,
        QuorumService,
        ReplicaManagerService,
    )
    from zurau.broker.quotas.client_quota_manager import ClientQuotaManager
    from zurau.broker.schema_validation import SchemaValidator
    from zurau.clock import Clock
    from zurau.config import BrokerConfig
    from zurau.coordinator.group.service import GroupCoordinatorService
    from zurau.coordinator.share.service import ShareCoordinatorService
    from zurau.coordinator.txn.service import TxnCoordinatorService
    from zurau.metadata.image import MetadataImage
    from zurau.protocol.messages import ApiVersionsResponseApiKeys
    from zurau.replication.share.share_partition_manager import SharePartitionManager


class CloseConnection(Exception):
    """Raised by a handler to close the client's connection instead of answering.

    Kafka does this for a failed ``acks=0`` produce: the client gets no response, so a closed
    connection is its only signal to refresh metadata.
    """


@dataclass(eq=False, slots=True)
class BrokerServices:
    """The narrow set of collaborators that handlers use (wired in :mod:`zurau.app`)."""

    node_id: int
    config: BrokerConfig  # the static config (server.properties); handlers read ctx.config
    clock: Clock
    replica_manager: ReplicaManagerService
    metadata: MetadataView
    controller: ControllerChannel
    groups: GroupCoordinatorService
    txns: TxnCoordinatorService
    api_versions: list[ApiVersionsResponseApiKeys]
    advertised: Callable[[], tuple[str, int]]
    running: Callable[[], bool]
    # The node id tools should see as the controller (Metadata, DescribeCluster): the active
    # controller in combined mode, -1 while none is known.
    controller_id: Callable[[], int] = lambda: -1
    # The KRaft quorum (None on a single node, whose metadata quorum is itself).
    quorum: QuorumService | None = None
    # Names of the listeners the controller quorum uses (controller.listener.names).
    controller_listeners: frozenset[str] = frozenset()
    # Request and topic metrics (None: metrics.http.listener is off, nothing is recorded).
    metrics: BrokerMetricsRecorder | None = None
    # The advertised (host, port) of a client listener by name (None: not known).
    advertised_for: Callable[[str], tuple[str, int] | None] | None = None
    # Broker-side schema ID validation (None: produce never inspects records for it).
    schema_validator: SchemaValidator | None = None
    # ACL checks (None: authorizer.class.name is unset, every request is allowed unchecked).
    authorizer: StandardAuthorizer | None = None
    # Incremental fetch sessions (KIP-227), made on first use by zurau.broker.fetch_session.
    fetch_sessions: FetchSessionCache | None = None
    # Client quotas (None: never enforced, as in tests with partial services).
    quotas: ClientQuotaManager | None = None
    # The share coordinator (KIP-932 share-group state; None: not served, as in tests with
    # partial services).
    shares: ShareCoordinatorService | None = None
    # Share-partitions of the partitions this broker leads (ShareFetch/ShareAcknowledge).
    share_partitions: SharePartitionManager | None = None
    # The broker's effective config: ``config`` with the dynamic broker configs of the current
    # metadata image (None: ``config`` itself, as in tests with partial services).
    effective_config: Callable[[], BrokerConfig] | None = None
    # Client telemetry (KIP-714): subscriptions, client instances, pushed metrics (None: the
    # telemetry APIs answer UNSUPPORTED_VERSION, as in tests with partial services).
    client_metrics: ClientMetricsManager | None = None
    # Has this node's metadata image caught up with the quorum (a broker: the controller said so
    # and the image was applied; a dedicated controller: its image reached the quorum's high
    # watermark)? Until then a controller listener refuses the APIs answered from the local image
    # (zurau.broker.connection.LOCAL_IMAGE_APIS). Client listeners open only after catch-up.
    metadata_caught_up: Callable[[], bool] = lambda: True


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    services: BrokerServices
    peer: str
    listener: str = ""  # name of the listener the request came in on (e.g. PLAINTEXT, CONTROLLER)
    session: SecuritySession | None = None  # the connection's authentication (None: unauthenticated tests)
    # (client_software_name, client_software_version) the connection sent in ApiVersions v3+.
    client_software: tuple[str, str] | None = None

    @property
    def principal(self) -> str:
        """``User:<name>`` of the connection (``User:ANONYMOUS`` without TLS client auth or SASL)."""
        return self.session.principal if self.session is not None else "User:ANONYMOUS"

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    # Shortcuts to the services, so handlers read ``ctx.replica_manager`` etc.
    @property
    def node_id(self) -> int:
        return self.services.node_id

    @property
    def config(self) -> BrokerConfig:
        """The broker's effective config as of now (static, with the dynamic broker configs)."""
        effective = self.services.effective_config
        return effective() if effective is not None else self.services.config

    @property
    def clock(self) -> Clock:
        return self.services.clock

    @property
    def replica_manager(self) -> ReplicaManagerService:
        return self.services.replica_manager

    @property
    def image(self) -> MetadataImage:
        """The metadata image as of now (read it once per request for a consistent view)."""
        return self.services.metadata.image

    @property
    def controller(self) -> ControllerChannel:
        """The controller channel; for a request that came in on a controller listener, one that
        never forwards (so a request cannot circulate between controllers)."""
        if self.listener in self.services.controller_listeners:
            return self.services.controller.without_forwarding()
        return self.services.controller

    @property
    def on_controller_listener(self) -> bool:
        return self.listener in self.services.controller_listeners

    @property
    def groups(self) -> GroupCoordinatorService:
        return self.services.groups

    @property
    def txns(self) -> TxnCoordinatorService:
        return self.services.txns

    @property
    def shares(self) -> ShareCoordinatorService | None:
        return getattr(self.services, "shares", None)  # tests may pass partial services

    @property
    def api_versions(self) -> list[ApiVersionsResponseApiKeys]:
        return self.services.api_versions

    @property
    def advertised(self) -> tuple[str, int]:
        """This node's advertised address on the request's listener (else its first one)."""
        advertised_for = getattr(self.services, "advertised_for", None)  # tests may pass partial services
        if self.listener and advertised_for is not None:
            found = advertised_for(self.listener)
            if found is not None:
                return found
        return self.services.advertised()

    @property
    def running(self) -> bool:
        return self.services.running()


__all__ = ["BrokerServices", "CloseConnection", "RequestContext"]
