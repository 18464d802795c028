"""Placement indexes against brute-force references."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from load_router import LeastLoaded, RoundRobin, SessionHash, stable_hash

ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(1, 20)),
        st.tuples(st.just("remove"), st.integers(0, 30)),
        st.tuples(st.just("load"), st.integers(0, 30), st.integers(0, 20)),
        st.tuples(st.just("choose"), st.integers(1, 20)),
    ),
    max_size=80,
)


@given(ops)
def test_least_loaded_matches_linear_scan(operations: list[tuple[int | str, ...]]) -> None:
    index = LeastLoaded().new_index()
    loads: dict[str, int] = {}
    caps: dict[str, int] = {}
    order: list[str] = []
    added = 0
    for op in operations:
        if op[0] == "add":
            engine_id = f"e{added}"
            added += 1
            index.add(engine_id, int(op[1]))
            loads[engine_id], caps[engine_id] = 0, int(op[1])
            order.append(engine_id)
        elif op[0] in ("remove", "load") and order:
            engine_id = order[int(op[1]) % len(order)]
            if op[0] == "remove":
                index.remove(engine_id)
                order.remove(engine_id)
                del loads[engine_id], caps[engine_id]
            else:
                load = min(int(op[2]), caps[engine_id])
                index.set_load(engine_id, load)
                loads[engine_id] = load
        elif op[0] == "choose":
            size = int(op[1])
            fitting = [e for e in order if loads[e] + size <= caps[e]]
            expected = min(fitting, key=lambda e: (loads[e], order.index(e)), default=None)
            assert index.choose("key", size) == expected


def test_least_loaded_heap_stays_bounded() -> None:
    index = LeastLoaded().new_index()
    for i in range(8):
        index.add(f"e{i}", 100)
    for step in range(10_000):
        index.set_load(f"e{step % 8}", step % 50)
    assert len(index._heap) <= 2 * 8 + 65  # type: ignore[attr-defined]
    assert index.choose("k", 1) is not None


def test_session_hash_ignores_load_and_is_stable() -> None:
    index = SessionHash().new_index()
    for i in range(4):
        index.add(f"e{i}", 10)
    target = f"e{stable_hash('task-7') % 4}"
    index.set_load(target, 9)  # nearly full, others empty: the hash still picks it
    assert index.choose("task-7", 1) == target
    assert index.choose("task-7", 2) is None  # full for this group: wait, do not spill over
    assert stable_hash("task-7") == stable_hash("task-7")


def test_round_robin_cycles_and_skips_full_engines() -> None:
    index = RoundRobin().new_index()
    for i in range(3):
        index.add(f"e{i}", 4)
    assert [index.choose("k", 1) for _ in range(4)] == ["e0", "e1", "e2", "e0"]
    index.set_load("e1", 4)
    assert [index.choose("k", 1) for _ in range(3)] == ["e2", "e0", "e2"]
    index.remove("e0")
    assert index.choose("k", 1) == "e2"
    index.set_load("e2", 4)
    assert index.choose("k", 1) is None


def test_policies_are_shareable_configs() -> None:
    policy = LeastLoaded()
    first, second = policy.new_index(), policy.new_index()
    first.add("a", 1)
    assert second.choose("k", 1) is None
    assert {LeastLoaded().name, SessionHash().name, RoundRobin().name} == {
        "least-loaded",
        "session-hash",
        "round-robin",
    }
