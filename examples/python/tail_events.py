#!/usr/bin/env python3
"""tail_events.py — a small consumer of sandboxd's event stream (docs/event-stream.md), in
Python. From Kafka, confluent-kafka reads every partition of the topic from offset 0 (no
consumer group: a real consumer keeps its offsets with its results); from a file log
(--data-dir, read-only), the segment files are parsed as docs/log-format.md describes them,
every batch's CRC-32C checked. pycapnp decodes each record, one Cap'n Proto `Event` of
schemas/events.capnp. Prints one line per event, the same as the C++ example
(examples/cpp/tail_events.cpp):

    PARTITION:OFFSET SANDBOX SEQUENCE TYPE OCCURRED_AT_NS TENANT

Per sandbox, a sequence at or below the last one printed is a duplicate and is skipped.
Without --follow it stops once every partition reached its end.

    python3 tail_events.py --brokers HOST:PORT [--topic sandboxd-events] [--follow]
    python3 tail_events.py --data-dir DIR   (the log directory: META and the .log segments)
                           [--schemas DIR]   (where events.capnp is; default: ../../schemas)
"""
import argparse
import os
import re
import struct
import sys

import capnp  # pycapnp


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data, crc=0):
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def file_log_records(log_dir):
    """Every record of the file log in log_dir as (partition, offset, value), each partition
    in offset order. A torn last batch of the last segment (a crash, or a write in flight) is
    left out; damage anywhere else raises."""
    with open(os.path.join(log_dir, "META")) as f:
        if f.readline().strip() != "sandboxd file log 1":
            raise ValueError(f"{log_dir} is not a sandboxd file log (version 1)")
    segments = sorted(n for n in os.listdir(log_dir) if re.fullmatch(r"[0-9]{20}\.log", n))
    records = []
    for i, name in enumerate(segments):
        with open(os.path.join(log_dir, name), "rb") as f:
            data = f.read()
        last = i + 1 == len(segments)
        if data[:8] != b"SBXLOG01":
            if last and len(data) <= 16:
                continue  # created just before a crash, header unwritten
            raise ValueError(f"{name}: no segment header")
        pos = 16
        while pos + 16 <= len(data):
            magic, crc, length, count = struct.unpack_from("<IIII", data, pos)
            body = data[pos + 16:pos + 16 + length]
            if (magic != 0x42584253 or len(body) != length
                    or crc32c(body, crc32c(data[pos + 8:pos + 16])) != crc):
                if last:
                    break  # the torn tail
                raise ValueError(f"{name}: a damaged batch at byte {pos}")
            at = 0
            for _ in range(count):
                _, key_len, value_len, partition, offset = struct.unpack_from("<IIIIQ", body, at)
                start = at + 24 + key_len
                records.append((partition, offset, body[start:start + value_len]))
                at = start + value_len
            pos += 16 + length
    records.sort(key=lambda r: (r[0], r[1]))
    return records


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="print sandboxd's events from Kafka or a file log")
    ap.add_argument("--brokers")
    ap.add_argument("--topic", default="sandboxd-events")
    ap.add_argument("--follow", action="store_true")
    ap.add_argument("--schemas", default=os.path.join(here, "..", "..", "schemas"))
    ap.add_argument("--data-dir", help="a file log's directory (read-only) instead of Kafka")
    args = ap.parse_args()

    # events.capnp imports "/capnp/c++.capnp", which pycapnp ships inside its own package.
    capnp_parent = os.path.dirname(os.path.dirname(os.path.abspath(capnp.__file__)))
    events = capnp.load(os.path.join(args.schemas, "events.capnp"), imports=[capnp_parent])
    last = {}

    def show(partition, offset, value):
        """Prints one record; False when its bytes are not an Event."""
        try:
            with events.Event.from_bytes(value) as ev:
                if ev.sequence <= last.get(ev.sandboxId, 0):
                    return True  # a duplicate
                last[ev.sandboxId] = ev.sequence
                try:
                    kind = ev.payload.which()
                except Exception:  # a payload newer than events.capnp: keep going
                    kind = "unknown"
                print(f"{partition}:{offset} {ev.sandboxId} {ev.sequence} {kind} "
                      f"{ev.occurredAtNs} {ev.tenant}", flush=True)
                return True
        except Exception as e:  # not an Event: report it and go on
            print(f"tail_events: {partition}:{offset} is not an event: {e}", file=sys.stderr)
            return False

    if args.data_dir:
        ok = all([show(p, o, v) for p, o, v in file_log_records(args.data_dir)])
        return 0 if ok else 1
    if not args.brokers:
        print("tail_events: give --brokers or --data-dir", file=sys.stderr)
        return 2
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": args.brokers,
        "group.id": "tail-events-example",  # required by the client; nothing is committed
        "enable.auto.commit": False,
        "enable.partition.eof": True,
    })
    meta = consumer.list_topics(args.topic, timeout=10)
    topic = meta.topics.get(args.topic)
    if topic is None or topic.error is not None or not topic.partitions:
        print(f"tail_events: topic {args.topic} not found at {args.brokers}", file=sys.stderr)
        return 1
    partitions = sorted(topic.partitions)
    consumer.assign([TopicPartition(args.topic, p, 0) for p in partitions])

    at_end = set()
    rc = 0
    while args.follow or len(at_end) < len(partitions):
        m = consumer.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(m.partition())
                continue
            print(f"tail_events: {m.error()}", file=sys.stderr)
            rc = 1
            break
        if not show(m.partition(), m.offset(), m.value()):
            rc = 1
    consumer.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
