"""What a world costs per conversation: its copy, the tool calls on it, its diff, and what is stored of it.

A seeded airline world of 1,000 records (customers, flights, bookings, refunds) is read once; each of 10,000
conversations takes its own copy and runs four declarative operations through ``run_operation``, as a support
flow's tools would: find the customer's bookings, read one, cancel it (``require: {status: confirmed}``), file a
refund. Then the conversation's ``trace()`` is taken and serialised as it is stored: the ``WorldTrace`` of the
transcript plus each call's ``WorldAccess``. CPU is ``time.process_time`` over the whole loop, best of ``--rounds``.

The baseline, timed in the same sitting, is the naive way: a deep copy of the seed per conversation (the cost
copy-on-write avoids; the operations and the trace are left out of it, so it is the copy alone).

    python bench/world.py [--records N] [--conversations C] [--rounds R]

Ends with one line: BENCH world_cpu_ms=X world_stored_kb=Y records=N conversations=C deepcopy_ms=D
(targets: world_cpu_ms under 1, world_stored_kb under 50).
"""

from __future__ import annotations

import argparse
import copy
import random
import time
from typing import Any

from simulator.models.world import WorldOperation, WorldSpec
from simulator.world import SeededWorld, run_operation

TARGET_CPU_MS = 1.0
TARGET_STORED_KB = 50.0
#: How a world of N records is split: a fifth customers, a twentieth flights, the rest bookings and refunds.
_SHARES = {"customers": 0.2, "flights": 0.05, "refunds": 0.1}

OPERATIONS = {
    "find_bookings": WorldOperation(find="bookings", where={"customer": "{customer_id}"}, limit=20),
    "get_booking": WorldOperation(get="bookings", id="{booking_id}", fields=["flight", "status", "fare"]),
    "cancel_booking": WorldOperation(
        update="bookings", id="{booking_id}", set={"status": "cancelled"}, require={"status": "confirmed"}
    ),
    "file_refund": WorldOperation(
        insert="refunds", record={"booking": "{booking_id}", "amount": "{amount}", "note": "refund of {booking_id}"}
    ),
}


def seed(records: int, rng: random.Random) -> WorldSpec:
    """An airline world of about ``records`` records, every field a realistic JSON value."""
    customers = max(1, int(records * _SHARES["customers"]))
    flights = max(1, int(records * _SHARES["flights"]))
    refunds = int(records * _SHARES["refunds"])
    bookings = max(1, records - customers - flights - refunds)
    world: dict[str, dict[str, dict[str, Any]]] = {
        "customers": {
            f"C{n:05d}": {
                "name": f"Customer {n}",
                "email": f"customer{n}@example.com",
                "tier": rng.choice(["basic", "silver", "gold"]),
                "miles": rng.randrange(0, 200_000),
            }
            for n in range(customers)
        },
        "flights": {
            f"SK{100 + n}": {
                "from": rng.choice(["CPH", "OSL", "ARN", "HEL"]),
                "to": rng.choice(["LHR", "CDG", "FRA", "AMS"]),
                "departs": f"2026-12-{1 + n % 28:02d}T{6 + n % 14:02d}:30",
                "seats_left": rng.randrange(0, 180),
            }
            for n in range(flights)
        },
        "bookings": {
            f"B{n:06d}": {
                "customer": f"C{rng.randrange(customers):05d}",
                "flight": f"SK{100 + rng.randrange(flights)}",
                "status": "confirmed",
                "fare": round(rng.uniform(49, 900), 2),
                "seat": f"{rng.randrange(1, 40)}{rng.choice('ABCDEF')}",
            }
            for n in range(bookings)
        },
        "refunds": {
            str(n + 1): {"booking": f"B{rng.randrange(bookings):06d}", "amount": round(rng.uniform(20, 400), 2)}
            for n in range(refunds)
        },
    }
    return WorldSpec(collections=world)


def conversation(seeded: SeededWorld, customer_id: str) -> int:
    """One conversation's use of its world; the bytes stored for it."""
    world = seeded.copy()
    stored = 0
    found = run_operation(world, OPERATIONS["find_bookings"], {"customer_id": customer_id})
    stored += len(found.access.model_dump_json())
    records = found.result.get("records") if isinstance(found.result, dict) else None
    first = records[0] if isinstance(records, list) and records else None
    booking_id = str(first["id"]) if isinstance(first, dict) else "B000000"
    for name, arguments in (
        ("get_booking", {"booking_id": booking_id}),
        ("cancel_booking", {"booking_id": booking_id}),
        ("file_refund", {"booking_id": booking_id, "amount": 120.5}),
    ):
        stored += len(run_operation(world, OPERATIONS[name], arguments).access.model_dump_json())
    return stored + len(world.trace().model_dump_json())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(7)
    spec = seed(args.records, rng)
    start = time.process_time()
    seeded = SeededWorld(spec)
    seed_ms = (time.process_time() - start) * 1000
    customers = sorted(spec.collections["customers"])
    picks = [rng.choice(customers) for _ in range(args.conversations)]
    for customer in picks[:100]:  # warm up: pydantic's serialisers, the regex cache
        conversation(seeded, customer)

    best_cpu, stored = float("inf"), 0
    for _ in range(args.rounds):
        start = time.process_time()
        stored = sum(conversation(seeded, customer) for customer in picks)
        best_cpu = min(best_cpu, time.process_time() - start)
    baseline_n = min(args.conversations, 1000)  # the deep copy is slow: a sample is enough for a per-copy figure
    start = time.process_time()
    for _ in range(baseline_n):
        copy.deepcopy(seeded.collections)
    deepcopy_ms = (time.process_time() - start) * 1000 / baseline_n

    cpu_ms = best_cpu * 1000 / args.conversations
    stored_kb = stored / args.conversations / 1024
    print(f"world: {seeded.size} records, {len(spec.collections)} collections, seeded once in {seed_ms:.1f} ms")
    print(f"{args.conversations} conversations x 4 operations (find, get, update, insert), best of {args.rounds}")
    print(f"cpu per conversation: {cpu_ms:.4f} ms (copy, operations, trace, serialisation; target < {TARGET_CPU_MS})")
    print(f"stored per conversation: {stored_kb:.2f} KB (trace and accesses as JSON; target < {TARGET_STORED_KB})")
    print(f"baseline, a deep copy of the seed per conversation: {deepcopy_ms:.3f} ms")
    print(
        f"BENCH world_cpu_ms={cpu_ms:.4f} world_stored_kb={stored_kb:.2f} records={seeded.size} "
        f"conversations={args.conversations} deepcopy_ms={deepcopy_ms:.3f}"
    )


if __name__ == "__main__":
    main()
