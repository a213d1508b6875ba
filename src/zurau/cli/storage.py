"""``zurau storage``: format log directories, as Kafka's ``kafka-storage.sh``.

* ``zurau storage random-uuid`` prints a new cluster id (and only that).
* ``zurau storage format --cluster-id ID --config server.properties [-o key=value ...]`` writes
  ``meta.properties`` (cluster id, node id) into every ``log.dirs`` directory and the
  ``metadata.log.dir``. A directory already formatted for the same cluster and node is left as it
  is with ``--ignore-formatted``, otherwise refused; one formatted for another cluster or node is
  always refused. Each directory gets its own ``directory.id``. A static quorum
  (``controller.quorum.voters``) needs no further flag. A dynamic one
  (``controller.quorum.bootstrap.servers``, KIP-853) formats its controllers with ``--standalone``
  (this controller is the whole quorum), ``--initial-controllers
  "1@host:port:DIRID,2@host:port:DIRID,..."`` (the first voters, with the directory ids their
  metadata directories get) or ``--no-initial-controllers`` (a controller to add later with
  ``zurau metadata-quorum add-controller``); its brokers need no flag. The first two write the
  bootstrap checkpoint ``00000000000000000000-0000000000.checkpoint`` holding the voter set.
* ``--add-scram 'SCRAM-SHA-512=[name=broker,password=broker-secret]'`` (``-S``, repeatable;
  KIP-900) gives a new cluster SCRAM credentials before it first starts, e.g. the login brokers use
  between themselves with ``sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512``. Syntax and
  checks are Kafka's (:mod:`zurau.metadata.scram_parser`): ``SCRAM-SHA-256`` or ``SCRAM-SHA-512``,
  then ``[name=...,password=...]`` or ``[name=...,salt=<base64>,saltedpassword=<base64>]``, with
  ``iterations=`` 4096..16384 (default 4096). A bad argument fails the command before any
  directory is touched.

Bootstrap metadata (the design; details in :mod:`zurau.metadata.bootstrap_metadata`): on a node
with the controller role the credentials become ``UserScramCredentialRecord``s (salt, stored and
server keys, iterations; never the password) in ``<metadata.log.dir>/bootstrap.checkpoint``, a
file in the KRaft snapshot layout (SnapshotHeader control batch, v2 batches of metadata records,
SnapshotFooter control batch), written atomically with the metadata directory's
``meta.properties``. Nothing applies that file directly: the first controller to become active
on a metadata log that holds no metadata record appends its records as the log's first batch,
and every other node (controllers and brokers) gets them by replication. Later leaders find
metadata in the log and ignore their own file, so the credentials take effect exactly once and
every node agrees; format every controller with the same ``--add-scram`` arguments, since any of
them may be first. A node that is its own single-node cluster appends them when its local
metadata log is still empty. A broker-only node accepts and checks the arguments but writes
nothing (it never leads the metadata log; Kafka writes the file there too and ignores it).

* ``--feature name=level`` (``-f``, repeatable) and ``--release-version 4.0`` (``-r``) choose the
  feature levels the new cluster finalizes (KIP-1022; :mod:`zurau.metadata.features`) instead of
  the defaults: every level goes into the bootstrap metadata as a ``FeatureLevelRecord``. An
  unknown feature, a level this software does not support or a dependency not met (e.g.
  ``share.version=1`` needs ``metadata.version`` 27) fails the command.

A broker whose configuration names several controllers refuses to start on unformatted
directories (format them first, with one cluster id for every node); with no configuration, or
one naming only this node, the broker formats itself on first start.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from zurau.cli.common import CommandError, parse_kv
from zurau.cli.output import print_error

if TYPE_CHECKING:
    from zurau.config import BrokerConfig
    from zurau.raft.voter_set import Endpoint, VoterSet

app = typer.Typer(help="Format log directories (like kafka-storage.sh).", no_args_is_help=True)


def _fail(message: str) -> None:
    print_error(message)
    raise typer.Exit(1)


@app.command("random-uuid")
def random_uuid() -> None:
    """Print a new random cluster id."""
    from zurau.metadata.topic_names import new_cluster_id

    typer.echo(new_cluster_id())


@app.command("format")
def format_(
    cluster_id: str = typer.Option(..., "--cluster-id", "-t", help="the cluster id (zurau storage random-uuid)"),
    config: Path = typer.Option(..., "--config", "-c", help="server.properties file"),
    override: list[str] = typer.Option([], "--override", "-o", help="key=value, overriding the file"),
    ignore_formatted: bool = typer.Option(False, "--ignore-formatted", "-g", help="skip formatted directories"),
    standalone: bool = typer.Option(False, "--standalone", "-s", help="dynamic quorum: this node alone"),
    initial_controllers: str | None = typer.Option(
        None, "--initial-controllers", "-I", help="dynamic quorum voters: id@host:port:directory-id,..."
    ),
    no_initial_controllers: bool = typer.Option(
        False, "--no-initial-controllers", "-N", help="dynamic quorum: a controller that joins later"
    ),
    add_scram: list[str] = typer.Option(
        [],
        "--add-scram",
        "-S",
        help="a SCRAM credential for the bootstrap metadata (repeatable), e.g. "
        "'SCRAM-SHA-256=[name=alice,password=alice-secret]' or "
        "'SCRAM-SHA-512=[name=alice,iterations=8192,salt=<base64>,saltedpassword=<base64>]'",
    ),
    feature: list[str] = typer.Option(
        [],
        "--feature",
        "-f",
        help="a feature level the new cluster finalizes instead of the default (repeatable), e.g. "
        "'group.version=0' or 'metadata.version=25'",
    ),
    release_version: str | None = typer.Option(
        None, "--release-version", "-r", help="the release whose metadata.version and feature defaults to use, e.g. 4.0"
    ),
) -> None:
    """Write meta.properties into every log directory of this node."""
    from zurau.config import BrokerConfig, ConfigError, load_properties
    from zurau.metadata.bootstrap_metadata import write_bootstrap_metadata
    from zurau.metadata.features import feature_records
    from zurau.metadata.metadata_log import MetaProperties, format_dirs, valid_cluster_id
    from zurau.metadata.records import MetadataRecord, UserScramCredentialRecord
    from zurau.metadata.scram_parser import ScramArgumentError, scram_records
    from zurau.raft.voter_set import ReplicaKey, Voter, VoterSet

    if not config.exists():
        _fail(f"config file {config} does not exist")
    props = dict(load_properties(config))
    try:
        props.update((k, v or "") for k, v in parse_kv(override, "--override"))
        cfg = BrokerConfig.from_props(props)
    except (CommandError, ConfigError) as e:
        _fail(str(e))
        return
    if not valid_cluster_id(cluster_id):
        _fail(f"Cluster ID string {cluster_id} does not appear to be a valid UUID (use zurau storage random-uuid)")
    dynamic = cfg.dynamic_quorum
    flags = sum([standalone, initial_controllers is not None, no_initial_controllers])
    if flags and not dynamic:
        _fail("--standalone, --initial-controllers and --no-initial-controllers are for dynamic quorums "
              "(controller.quorum.bootstrap.servers); this config has no dynamic quorum")
    if flags > 1:
        _fail("give only one of --standalone, --initial-controllers and --no-initial-controllers")
    if dynamic and cfg.is_controller and not flags:
        _fail("a controller of a dynamic quorum is formatted with --standalone, --initial-controllers "
              "or --no-initial-controllers")
    if flags and not cfg.is_controller:
        _fail("--standalone, --initial-controllers and --no-initial-controllers format controllers; "
              "this node has no controller role")
    scram: list[UserScramCredentialRecord] = []
    try:
        scram = scram_records(add_scram)
    except ScramArgumentError as e:
        _fail(str(e))
    if scram and not cfg.is_controller:
        typer.echo("This node has no controller role: the --add-scram credentials are checked but not written "
                   "(only controllers bootstrap the metadata log; format them with --add-scram)")
        scram = []
    try:
        levels = bootstrap_levels(feature, release_version, dynamic=dynamic)
    except ValueError as e:
        _fail(str(e))
        return
    metadata_dir_id = uuid.uuid4()
    voters = None
    try:
        if standalone:
            voters = VoterSet([Voter(ReplicaKey(cfg.node_id, metadata_dir_id), controller_endpoints(cfg))])
        elif initial_controllers is not None:
            voters = parse_initial_controllers(initial_controllers, cfg.controller_listener_names[:1] or ["CONTROLLER"])
            if cfg.node_id not in voters:
                _fail(f"--initial-controllers does not name this node (node.id {cfg.node_id})")
            metadata_dir_id = voters[cfg.node_id].key.directory_id
    except ValueError as e:
        _fail(str(e))
        return
    dirs = sorted({*cfg.log_dirs, cfg.metadata_log_dir})
    try:
        written = format_dirs(
            dirs,
            MetaProperties(cluster_id, cfg.node_id),
            ignore_formatted=ignore_formatted,
            directory_ids={cfg.metadata_log_dir: metadata_dir_id},
        )
        if voters is not None and cfg.metadata_log_dir in written:
            write_bootstrap_checkpoint(cfg.metadata_log_dir, cluster_id, voters)
        if (scram or levels) and cfg.is_controller and cfg.metadata_log_dir in written:
            records: list[MetadataRecord] = [*feature_records(levels or {}), *scram]
            path = write_bootstrap_metadata(cfg.metadata_log_dir, records, int(time.time() * 1000))
            if scram:
                typer.echo(f"Bootstrap metadata: {len(scram)} SCRAM credential(s) in {path}")
            if levels:
                shown = ", ".join(f"{n}={lv}" for n, lv in levels.items())
                typer.echo(f"Bootstrap metadata: feature levels {shown} in {path}")
    except OSError as e:
        _fail(f"cannot format: {e}")
        return
    except ValueError as e:
        _fail(str(e))
        return
    for d in dirs:
        typer.echo(f"{'Formatting' if d in written else 'Skipping already formatted'} {d} with cluster.id {cluster_id}")


def bootstrap_levels(features: list[str], release_version: str | None, *, dynamic: bool) -> dict[str, int] | None:
    """The feature levels ``--feature name=level`` and ``--release-version`` ask a new cluster to
    finalize (every feature of the metadata log, the others at their defaults), or None when
    neither is given (the defaults then apply at bootstrap). ValueError with Kafka's wording for
    an unknown feature, a level outside the supported range or a dependency not met.
    ``kraft.version`` is accepted only at the level the quorum's configuration gives it (1 for a
    dynamic quorum, else 0): Zurau's quorum decides it, not a record."""
    from zurau.metadata.features import (
        KRAFT_VERSION,
        METADATA_VERSION,
        default_levels,
        release_metadata_version,
        validate_bootstrap_levels,
    )

    if not features and release_version is None:
        return None
    overrides: dict[str, int] = {}
    for item in features:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"Can't parse feature={item!r}. The expected format is name=level, e.g. group.version=1")
        try:
            overrides[name] = int(value)
        except ValueError:
            raise ValueError(f"Can't parse feature={item!r}: {value!r} is not a level (an integer)") from None
    kraft = overrides.pop(KRAFT_VERSION, None)
    if kraft is not None and kraft != (1 if dynamic else 0):
        raise ValueError(
            f"kraft.version {kraft} does not match this quorum: a static quorum (controller.quorum.voters) is "
            "kraft.version 0, a dynamic one (controller.quorum.bootstrap.servers) kraft.version 1"
        )
    mv = None
    if release_version is not None:
        if METADATA_VERSION in overrides:
            raise ValueError("Use --release-version or --feature metadata.version=..., not both")
        mv = release_metadata_version(release_version)
    levels = default_levels(overrides, metadata_version=mv)
    validate_bootstrap_levels(levels)
    return levels


def controller_endpoints(cfg: BrokerConfig) -> tuple[Endpoint, ...]:
    """This controller's endpoints: its listeners named in ``controller.listener.names`` (an
    empty host -- every interface -- is advertised as ``localhost``)."""
    from zurau.metadata.kraft_manager import advertised_host
    from zurau.raft.voter_set import Endpoint

    names = set(cfg.controller_listener_names)
    found = tuple(
        Endpoint(li.name.upper(), advertised_host(li.host), li.port) for li in cfg.listeners if li.name.upper() in names
    )
    if not found:
        raise ValueError("a controller needs listeners named in controller.listener.names")
    return found


def parse_initial_controllers(text: str, listener: list[str]) -> VoterSet:
    """``--initial-controllers``: ``id@host:port:directory-id`` entries, comma separated (Kafka's
    form), each on the controller listener ``listener[0]``."""
    from zurau.metadata.metadata_log import parse_kafka_uuid
    from zurau.raft.voter_set import Endpoint, ReplicaKey, Voter, VoterSet

    voters = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        node, sep, rest = item.partition("@")
        address, sep2, dir_text = rest.rpartition(":")
        host, sep3, port = address.rpartition(":")
        if not (sep and sep2 and sep3 and node.isdigit() and port.isdigit() and host):
            raise ValueError(f"--initial-controllers entry {item!r} is not of the form id@host:port:directory-id")
        voters.append(
            Voter(ReplicaKey(int(node), parse_kafka_uuid(dir_text)), (Endpoint(listener[0], host.strip("[]"), int(port)),))
        )
    if not voters:
        raise ValueError("--initial-controllers names no controller")
    return VoterSet(voters)


def write_bootstrap_checkpoint(metadata_dir: Path, cluster_id: str, voters: VoterSet) -> None:
    """The dynamic quorum's bootstrap checkpoint (snapshot 0-0: header, KRaftVersionRecord,
    VotersRecord, footer) in the metadata log directory."""
    from zurau.metadata.image import MetadataImage
    from zurau.metadata.kraft_log import KRaftLog
    from zurau.metadata.snapshot import encode_snapshot
    from zurau.raft.messages import OffsetAndEpoch

    now = int(time.time() * 1000)
    log = KRaftLog(metadata_dir, lambda: now)
    try:
        log.create_snapshot(OffsetAndEpoch(0, 0), encode_snapshot(MetadataImage(cluster_id), now, voters))
    finally:
        log.close()
