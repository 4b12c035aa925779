"""A retriever's side of shadoweval, with nats-py (pip install nats-py):
after answering a request, publish one trace event on NATS, on
rag.trace.<arm>.<key>, with the arm of the pod it runs in."""
import asyncio
import json
import os
import re
from datetime import datetime, timezone


def arm():
    """The pod's arm, from its labels, which the Downward API writes to a
    file (LABELS_FILE, default /etc/podinfo/labels) and keeps up to date:
    Flagger's primary pods (app: <name>-primary) are live; otherwise the
    label arm says, which Argo Rollouts sets to canary or live on each pod
    and changes on promotion; live when there is none."""
    labels = {}
    try:
        with open(os.environ.get("LABELS_FILE", "/etc/podinfo/labels")) as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                labels[key] = value.strip('"')
    except OSError:
        return "live"
    if labels.get("app", "").endswith("-primary"):
        return "live"
    return labels.get("arm") or "live"


def trace_event(arm):
    """What the retriever retrieved and answered for one request."""
    return {
        "qid": "A0001",
        "request_id": "r-20931",
        "arm": arm,
        "ts": datetime.now(timezone.utc).isoformat(),
        "query": "Does X support null keys?",
        "topk": [{"id": "p1#2", "score": 0.83}, {"id": "p1#1", "score": 0.61}],
        "answer_json": {"claim": "X rejects null keys.", "citations": ["p1#2"]},
    }


def subject(arm, qid):
    """rag.trace.<arm>.<key>. The key token keeps a question's events on one
    member of a scaled-out sidecar (cluster.partitions); a single sidecar
    takes it too. The key is the qid when it is a safe subject token, else
    h and the 16 hex digits of its FNV-1a 64-bit hash."""
    key = qid
    if not re.fullmatch(r"[A-Za-z0-9_:=+-]{1,64}", qid):
        h = 0xCBF29CE484222325
        for b in qid.encode():
            h = ((h ^ b) * 0x100000001B3) % (1 << 64)
        key = "h%016x" % h
    return "rag.trace." + arm + "." + key


async def main():
    import nats

    nc = await nats.connect(os.environ.get("NATS_URL", "nats://127.0.0.1:4222"))
    event = trace_event(arm())
    await nc.publish(subject(event["arm"], event["qid"]), json.dumps(event).encode())
    await nc.flush()
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main())
