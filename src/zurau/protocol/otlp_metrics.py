"""The OpenTelemetry metrics a client pushes (KIP-714 PushTelemetry): an OTLP ``MetricsData``
protobuf, decoded by a small protobuf wire reader of our own (no generated code, no dependency).

Protobuf wire format, as far as it is read here: a message is a sequence of fields, each a key
varint ``field_number << 3 | wire_type`` then the value: wire type 0 a varint, 1 eight bytes
little-endian (fixed64, sfixed64, double), 2 a varint length then that many bytes (a string,
bytes, an embedded message or a packed repeated scalar), 5 four bytes (fixed32, float). Wire
types 3 and 4 (groups) are refused. Unknown fields are skipped, so newer OTLP versions decode;
a truncated or malformed message raises :class:`OtlpDecodeError`.

The OTLP messages read (``opentelemetry/proto/metrics/v1/metrics.proto`` and
``common/v1/common.proto``; field numbers in brackets)::

    MetricsData      resource_metrics[1]*
    ResourceMetrics  resource[1] (Resource: attributes[1]*), scope_metrics[2]*
    ScopeMetrics     scope[1], metrics[2]*
    Metric           name[1], description[2], unit[3], one of gauge[5], sum[7], histogram[9],
                     exponential_histogram[10], summary[11]
    Gauge            data_points[1]* (NumberDataPoint)
    Sum              data_points[1]*, aggregation_temporality[2] (1 DELTA, 2 CUMULATIVE),
                     is_monotonic[3]
    Histogram        data_points[1]* (HistogramDataPoint), aggregation_temporality[2]
    ExponentialHistogram  data_points[1]* (count[4] fixed64, sum[5] double, attributes[1]*),
                     aggregation_temporality[2]
    Summary          data_points[1]* (SummaryDataPoint)
    NumberDataPoint  attributes[7]*, start_time_unix_nano[2], time_unix_nano[3],
                     as_double[4] | as_int[6] (sfixed64)
    HistogramDataPoint  attributes[9]*, start[2], time[3], count[4] fixed64, sum[5] double
    SummaryDataPoint attributes[7]*, start[2], time[3], count[4] fixed64, sum[5] double
    KeyValue         key[1], value[2] (AnyValue: string[1], bool[2], int[3], double[4],
                     array[5], kvlist[6], bytes[7])

What comes out is flat: the resource's attributes and one :class:`MetricPoint` per data point
(a histogram or summary point gives two: ``<name>.count`` and ``<name>.sum``, sums with the
metric's temporality). Attribute values become strings (ints and bools as their text, arrays and
key-value lists as their OTLP JSON-ish text).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = [
    "CUMULATIVE",
    "DELTA",
    "GAUGE",
    "SUM",
    "MetricPoint",
    "MetricsData",
    "OtlpDecodeError",
    "decode_metrics_data",
]

GAUGE, SUM = "gauge", "sum"
DELTA, CUMULATIVE = 1, 2

_F64 = struct.Struct("<d")
_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")


class OtlpDecodeError(ValueError):
    """The bytes are not an OTLP MetricsData protobuf."""


@dataclass(frozen=True, slots=True)
class MetricPoint:
    """One data point: ``kind`` GAUGE or SUM; for a SUM, ``temporality`` DELTA or CUMULATIVE
    (0 unspecified) and ``monotonic``. ``attributes`` are the point's, sorted by key."""

    name: str
    kind: str
    value: float
    attributes: tuple[tuple[str, str], ...] = ()
    temporality: int = 0
    monotonic: bool = False
    time_unix_nano: int = 0
    start_time_unix_nano: int = 0
    unit: str = ""
    description: str = ""


@dataclass(frozen=True, slots=True)
class MetricsData:
    """A decoded push: the (first) resource's attributes and every data point."""

    resource: dict[str, str] = field(default_factory=dict)
    points: list[MetricPoint] = field(default_factory=list)


# ------------------------------------------------------------------------------ wire reader
def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise OtlpDecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise OtlpDecodeError("varint longer than 10 bytes")


def _fields(buf: memoryview) -> Iterator[tuple[int, int, int | memoryview]]:
    """(field number, wire type, value) of each field of one message: an int for wire types
    0, 1 and 5 (raw unsigned bits), a memoryview for wire type 2."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise OtlpDecodeError("field number 0")
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value
        elif wire == 1:
            if pos + 8 > end:
                raise OtlpDecodeError("truncated fixed64")
            yield number, wire, _U64.unpack_from(buf, pos)[0]
            pos += 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            if pos + n > end:
                raise OtlpDecodeError("truncated length-delimited field")
            yield number, wire, buf[pos : pos + n]
            pos += n
        elif wire == 5:
            if pos + 4 > end:
                raise OtlpDecodeError("truncated fixed32")
            yield number, wire, int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            raise OtlpDecodeError(f"unsupported wire type {wire}")


def _bytes(wire: int, value: int | memoryview) -> memoryview:
    if wire != 2 or not isinstance(value, memoryview):
        raise OtlpDecodeError("expected a length-delimited field")
    return value


def _str(wire: int, value: int | memoryview) -> str:
    try:
        return bytes(_bytes(wire, value)).decode()
    except UnicodeDecodeError:
        raise OtlpDecodeError("a string that is not UTF-8") from None


def _int(wire: int, value: int | memoryview) -> int:
    if isinstance(value, memoryview):
        raise OtlpDecodeError("expected a scalar field")
    return value


def _double(wire: int, value: int | memoryview) -> float:
    if wire != 1 or isinstance(value, memoryview):
        raise OtlpDecodeError("expected a double")
    return float(_F64.unpack(_U64.pack(value))[0])


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


# ------------------------------------------------------------------------------ OTLP messages
def _any_value(buf: memoryview) -> str:
    for number, wire, value in _fields(buf):
        if number == 1:
            return _str(wire, value)
        if number == 2:
            return "true" if _int(wire, value) else "false"
        if number == 3:
            return str(_signed64(_int(wire, value)))
        if number == 4:
            return repr(_double(wire, value))
        if number == 5:  # ArrayValue: values[1]*
            items = [_any_value(_bytes(w, v)) for n, w, v in _fields(_bytes(wire, value)) if n == 1]
            return "[" + ",".join(items) + "]"
        if number == 6:  # KeyValueList: values[1]* KeyValue
            pairs = [_key_value(_bytes(w, v)) for n, w, v in _fields(_bytes(wire, value)) if n == 1]
            return "{" + ",".join(f"{k}={v}" for k, v in pairs) + "}"
        if number == 7:
            return bytes(_bytes(wire, value)).hex()
    return ""


def _key_value(buf: memoryview) -> tuple[str, str]:
    key, val = "", ""
    for number, wire, value in _fields(buf):
        if number == 1:
            key = _str(wire, value)
        elif number == 2:
            val = _any_value(_bytes(wire, value))
    return key, val


def _attributes(pairs: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(dict(pairs).items()))


@dataclass(slots=True)
class _Metric:
    name: str = ""
    description: str = ""
    unit: str = ""


def _number_point(buf: memoryview, m: _Metric, kind: str, temporality: int, monotonic: bool) -> MetricPoint:
    attrs: list[tuple[str, str]] = []
    value = 0.0
    start = t = 0
    for number, wire, raw in _fields(buf):
        if number == 7:
            attrs.append(_key_value(_bytes(wire, raw)))
        elif number == 2:
            start = _int(wire, raw)
        elif number == 3:
            t = _int(wire, raw)
        elif number == 4:
            value = _double(wire, raw)
        elif number == 6:
            if wire != 1:
                raise OtlpDecodeError("as_int is not a sfixed64")
            value = float(_signed64(_int(wire, raw)))
    return MetricPoint(
        m.name, kind, value, _attributes(attrs), temporality, monotonic, t, start, m.unit, m.description
    )


def _count_sum_points(
    buf: memoryview, m: _Metric, attributes_field: int, temporality: int
) -> tuple[MetricPoint, MetricPoint]:
    """A histogram, exponential histogram or summary point as its count and sum."""
    attrs: list[tuple[str, str]] = []
    count, total = 0, 0.0
    start = t = 0
    for number, wire, raw in _fields(buf):
        if number == attributes_field:
            attrs.append(_key_value(_bytes(wire, raw)))
        elif number == 2:
            start = _int(wire, raw)
        elif number == 3:
            t = _int(wire, raw)
        elif number == 4:
            count = _int(wire, raw)
        elif number == 5:
            total = _double(wire, raw)
    a = _attributes(attrs)
    return (
        MetricPoint(f"{m.name}.count", SUM, float(count), a, temporality, True, t, start, "", m.description),
        MetricPoint(f"{m.name}.sum", SUM, total, a, temporality, False, t, start, m.unit, m.description),
    )


def _aggregation(buf: memoryview) -> tuple[list[memoryview], int, bool]:
    points: list[memoryview] = []
    temporality, monotonic = 0, False
    for number, wire, value in _fields(buf):
        if number == 1:
            points.append(_bytes(wire, value))
        elif number == 2:
            temporality = _int(wire, value)
        elif number == 3:
            monotonic = bool(_int(wire, value))
    return points, temporality, monotonic


def _metric(buf: memoryview, out: list[MetricPoint]) -> None:
    m = _Metric()
    data: list[tuple[int, memoryview]] = []
    for number, wire, value in _fields(buf):
        if number == 1:
            m.name = _str(wire, value)
        elif number == 2:
            m.description = _str(wire, value)
        elif number == 3:
            m.unit = _str(wire, value)
        elif number in (5, 7, 9, 10, 11):
            data.append((number, _bytes(wire, value)))
    for number, body in data:
        points, temporality, monotonic = _aggregation(body)
        if number == 5:
            out += [_number_point(p, m, GAUGE, 0, False) for p in points]
        elif number == 7:
            out += [_number_point(p, m, SUM, temporality, monotonic) for p in points]
        else:
            attributes_field = {9: 9, 10: 1, 11: 7}[number]
            for p in points:
                out += _count_sum_points(p, m, attributes_field, temporality if number != 11 else CUMULATIVE)


def decode_metrics_data(payload: bytes | memoryview) -> MetricsData:
    """Decode a ``MetricsData`` message (already decompressed). Raises :class:`OtlpDecodeError`
    when it is not one."""
    buf = memoryview(payload).cast("B") if not isinstance(payload, memoryview) else payload.cast("B")
    resource: dict[str, str] = {}
    points: list[MetricPoint] = []
    for number, wire, value in _fields(buf):
        if number != 1:
            continue
        for rn, rw, rv in _fields(_bytes(wire, value)):
            if rn == 1:  # Resource
                for an, aw, av in _fields(_bytes(rw, rv)):
                    if an == 1:
                        k, v = _key_value(_bytes(aw, av))
                        resource.setdefault(k, v)
            elif rn == 2:  # ScopeMetrics
                for sn, sw, sv in _fields(_bytes(rw, rv)):
                    if sn == 2:
                        _metric(_bytes(sw, sv), points)
    return MetricsData(resource, points)
