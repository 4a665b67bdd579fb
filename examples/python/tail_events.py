#!/usr/bin/env python3
"""tail_events.py — a small consumer of sandboxd's event stream (docs/event-stream.md), in
Python: confluent-kafka reads every partition of the topic from offset 0 (no consumer group:
a real consumer keeps its offsets with its results) and pycapnp decodes each record, one
Cap'n Proto `Event` of schemas/events.capnp. Prints one line per event, the same as the C++
example (examples/cpp/tail_events.cpp):

    PARTITION:OFFSET SANDBOX SEQUENCE TYPE OCCURRED_AT_NS TENANT

Per sandbox, a sequence at or below the last one printed is a duplicate and is skipped.
Without --follow it stops once every partition reached its end.

    python3 tail_events.py --brokers HOST:PORT [--topic sandboxd-events] [--follow]
                           [--schemas DIR]   (where events.capnp is; default: ../../schemas)
"""
import argparse
import os
import sys

import capnp  # pycapnp
from confluent_kafka import Consumer, KafkaError, TopicPartition


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="print sandboxd's events from a Kafka topic")
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", default="sandboxd-events")
    ap.add_argument("--follow", action="store_true")
    ap.add_argument("--schemas", default=os.path.join(here, "..", "..", "schemas"))
    args = ap.parse_args()

    # events.capnp imports "/capnp/c++.capnp", which pycapnp ships inside its own package.
    capnp_parent = os.path.dirname(os.path.dirname(os.path.abspath(capnp.__file__)))
    events = capnp.load(os.path.join(args.schemas, "events.capnp"), imports=[capnp_parent])

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

    last = {}
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
        try:
            with events.Event.from_bytes(m.value()) as ev:
                if ev.sequence <= last.get(ev.sandboxId, 0):
                    continue  # a duplicate
                last[ev.sandboxId] = ev.sequence
                try:
                    kind = ev.payload.which()
                except Exception:  # a payload newer than events.capnp: keep going
                    kind = "unknown"
                print(f"{m.partition()}:{m.offset()} {ev.sandboxId} {ev.sequence} {kind} "
                      f"{ev.occurredAtNs} {ev.tenant}", flush=True)
        except Exception as e:  # not an Event: report it and go on
            print(f"tail_events: {m.partition()}:{m.offset()} is not an event: {e}",
                  file=sys.stderr)
            rc = 1
    consumer.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
