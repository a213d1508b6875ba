"""``zurau features describe|upgrade|downgrade|disable|version-mapping``: kafka-features.sh.

* ``describe`` reads one broker's ApiVersions (v3+) and prints, per feature (by name), Kafka's
  line: ``Feature: NAME<TAB>SupportedMinVersion: A<TAB>SupportedMaxVersion: B<TAB>
  FinalizedVersionLevel: C<TAB>Epoch: E``; ``metadata.version`` levels as release names
  (``4.2-IV1``), a feature not finalized at level 0.
* ``upgrade`` / ``downgrade`` send UpdateFeatures (decided by the active controller, all or
  nothing) for ``--feature name=level`` (repeatable; ``metadata.version`` also takes a release
  name, ``--metadata 4.0`` is its short form) or ``--release-version 4.0`` (that release's
  ``metadata.version`` and the default level of every other feature at it, for the features that
  move in the command's direction). ``downgrade`` is a SAFE_DOWNGRADE, or UNSAFE_DOWNGRADE with
  ``--unsafe``. ``disable --feature name`` downgrades to level 0. ``--dry-run`` validates only.
  Each feature is reported as Kafka does (``group.version was upgraded to 1.``, ``... can be
  upgraded to 1.`` on a dry run); a refusal is ``Could not upgrade group.version to 1. <reason>``
  and exit status 1.
* ``version-mapping [--release-version R]`` prints the levels a release implies, from this
  software's table (:mod:`zurau.protocol.feature_levels`).

Talks to brokers only through :mod:`zurau.client`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from zurau.cli.common import BootstrapOption, CommandConfigOption, client_config, run
from zurau.cli.output import print_error

app = typer.Typer(
    help="Describe and change the cluster's feature levels (like kafka-features.sh).", no_args_is_help=True
)

FeatureOption = typer.Option([], "--feature", "-f", help="name=level (repeatable)")
ReleaseOption = typer.Option(None, "--release-version", "-r", help="a release, e.g. 4.0 or 3.7-IV2")
MetadataOption = typer.Option(None, "--metadata", help="short for --feature metadata.version=RELEASE")
DryRunOption = typer.Option(False, "--dry-run", help="validate only; change nothing")
UnsafeOption = typer.Option(False, "--unsafe", help="an UNSAFE_DOWNGRADE (may lose metadata)")


def _level_text(name: str, level: int) -> str:
    from zurau.protocol.feature_levels import METADATA_VERSION, metadata_version_name

    return metadata_version_name(level) if name == METADATA_VERSION and level > 0 else str(level)


def _parse_level(name: str, text: str) -> int:
    from zurau.protocol.feature_levels import METADATA_VERSION, release_metadata_version

    try:
        return int(text)
    except ValueError:
        if name == METADATA_VERSION:
            return release_metadata_version(text)
        raise ValueError(f"Can't parse feature={name}={text!r}: the level must be an integer") from None


def parse_features(items: list[str]) -> dict[str, int]:
    """``name=level`` items as a dict; ValueError naming a bad one."""
    out: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(
                f"Can't parse feature={item!r}. The expected format is name=level, e.g. group.version=1"
            )
        out[name] = _parse_level(name, value.strip())
    return out


def release_updates(release: str, finalized: dict[str, int], upgrade: bool) -> dict[str, int]:
    """The levels ``--release-version`` asks for: that release's ``metadata.version`` and each
    other feature's default at it, keeping only the features that move in the command's
    direction (or stay)."""
    from zurau.protocol.feature_levels import default_levels, release_metadata_version

    wanted = default_levels(metadata_version=release_metadata_version(release))
    return {
        name: level
        for name, level in wanted.items()
        if (level >= finalized.get(name, 0) if upgrade else level <= finalized.get(name, 0))
    }


def requested(
    features: list[str],
    release_version: str | None,
    metadata: str | None,
    finalized: dict[str, int],
    upgrade: bool,
) -> dict[str, int]:
    from zurau.protocol.feature_levels import METADATA_VERSION, release_metadata_version

    given = sum([bool(features), release_version is not None, metadata is not None])
    if given != 1:
        raise ValueError("Give exactly one of --feature, --release-version and --metadata")
    if release_version is not None:
        return release_updates(release_version, finalized, upgrade)
    if metadata is not None:
        return {METADATA_VERSION: release_metadata_version(metadata)}
    return parse_features(features)


def _update(
    op: str,
    levels: dict[str, int],
    kind_name: str,
    dry_run: bool,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Send one UpdateFeatures for ``levels`` and print Kafka's lines."""
    from zurau.client.admin import AdminClient, FeatureUpgradeType
    from zurau.protocol.errors import KafkaError

    cfg = client_config(bootstrap_server, command_config)
    kind = FeatureUpgradeType[kind_name]

    async def main() -> tuple[list[str], bool]:
        async with AdminClient(cfg) as admin:
            try:
                await admin.update_features(
                    {n: (lv, kind) for n, lv in levels.items()}, validate_only=dry_run
                )
            except KafkaError as e:
                what = ", ".join(f"{n} to {_level_text(n, lv)}" for n, lv in levels.items())
                return [f"Could not {op} {what}. {e}"], False
        done = {"upgrade": "upgraded", "downgrade": "downgraded", "disable": "disabled"}[op]
        lines = []
        for n, lv in levels.items():
            if op == "disable":
                lines.append(f"{n} can be disabled." if dry_run else f"{n} was disabled.")
            else:
                verb = f"can be {done}" if dry_run else f"was {done}"
                lines.append(f"{n} {verb} to {_level_text(n, lv)}.")
        return lines, True

    lines, ok = run(main)
    for line in lines:
        (typer.echo if ok else print_error)(line)
    if not ok:
        raise typer.Exit(1)


def _finalized(bootstrap_server: str | None, command_config: Path | None) -> dict[str, int]:
    from zurau.client.admin import AdminClient

    cfg = client_config(bootstrap_server, command_config)

    async def main() -> dict[str, int]:
        async with AdminClient(cfg) as admin:
            return (await admin.describe_features()).finalized

    return run(main)


def _fail(message: str) -> None:
    print_error(message)
    raise typer.Exit(1)


def _change_levels(
    verb: str,
    kind: str,
    feature: list[str],
    release_version: str | None,
    metadata: str | None,
    dry_run: bool,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """upgrade or downgrade: the levels asked for (a release's levels are compared with the
    finalized ones, so only the finalized are fetched first), then one UpdateFeatures of ``kind``."""
    finalized = _finalized(bootstrap_server, command_config) if release_version is not None else {}
    try:
        levels = requested(feature, release_version, metadata, finalized, upgrade=verb == "upgrade")
    except ValueError as e:
        _fail(str(e))
        return
    _update(verb, levels, kind, dry_run, bootstrap_server, command_config)


@app.command("describe")
def describe(
    bootstrap_server: str | None = BootstrapOption, command_config: Path | None = CommandConfigOption
) -> None:
    """Print every supported feature with its finalized level (kafka-features.sh describe)."""
    from zurau.client.admin import AdminClient, FeatureMetadata

    cfg = client_config(bootstrap_server, command_config)

    async def main() -> FeatureMetadata:
        async with AdminClient(cfg) as admin:
            return await admin.describe_features()

    meta = run(main)
    epoch = "-" if meta.finalized_epoch is None else str(meta.finalized_epoch)
    for name in sorted(meta.supported):
        low, high = meta.supported[name]
        level = meta.finalized.get(name, 0)
        typer.echo(
            f"Feature: {name}\tSupportedMinVersion: {_level_text(name, low)}\t"
            f"SupportedMaxVersion: {_level_text(name, high)}\tFinalizedVersionLevel: {_level_text(name, level)}\t"
            f"Epoch: {epoch}"
        )


@app.command("upgrade")
def upgrade(
    feature: list[str] = FeatureOption,
    release_version: str | None = ReleaseOption,
    metadata: str | None = MetadataOption,
    dry_run: bool = DryRunOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Raise feature levels (kafka-features.sh upgrade)."""
    _change_levels(
        "upgrade", "UPGRADE", feature, release_version, metadata, dry_run, bootstrap_server, command_config
    )


@app.command("downgrade")
def downgrade(
    feature: list[str] = FeatureOption,
    release_version: str | None = ReleaseOption,
    metadata: str | None = MetadataOption,
    unsafe: bool = UnsafeOption,
    dry_run: bool = DryRunOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Lower feature levels (kafka-features.sh downgrade)."""
    kind = "UNSAFE_DOWNGRADE" if unsafe else "SAFE_DOWNGRADE"
    _change_levels(
        "downgrade", kind, feature, release_version, metadata, dry_run, bootstrap_server, command_config
    )


@app.command("disable")
def disable(
    feature: list[str] = typer.Option([], "--feature", "-f", help="a feature name (repeatable)"),
    unsafe: bool = UnsafeOption,
    dry_run: bool = DryRunOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Set features to level 0 (kafka-features.sh disable)."""
    if not feature:
        _fail("Give at least one --feature to disable")
    kind = "UNSAFE_DOWNGRADE" if unsafe else "SAFE_DOWNGRADE"
    _update("disable", dict.fromkeys(feature, 0), kind, dry_run, bootstrap_server, command_config)


@app.command("version-mapping")
def version_mapping(release_version: str | None = ReleaseOption) -> None:
    """Print the feature levels a release implies (kafka-features.sh version-mapping)."""
    from zurau.protocol.feature_levels import (
        METADATA_VERSION,
        METADATA_VERSION_LATEST,
        default_levels,
        release_metadata_version,
    )

    try:
        mv = release_metadata_version(release_version) if release_version else METADATA_VERSION_LATEST
    except ValueError as e:
        _fail(str(e))
        return
    for name, level in default_levels(metadata_version=mv).items():
        shown = f"{_level_text(name, level)}" if name == METADATA_VERSION else str(level)
        typer.echo(f"{name}={shown}" if name != METADATA_VERSION else f"metadata.version={level} ({shown})")
