"""Kafka 0.8.2/0.9 old-consumer assignment (PartitionAssignor.scala, TopicCount.scala, ZkUtils.scala).

Expected values are worked out by hand from Kafka's code; the hypothesis tests compare against small
references written another way.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_tools.consumers.assignors import (
    BLACK_LIST,
    WHITE_LIST,
    AssignmentError,
    Member,
    ThreadId,
    assign,
    consumers_per_topic,
    member_from_registration,
    range_assign,
    round_robin_assign,
    round_robin_order,
    round_robin_ties,
    threads_for,
    wildcard_regex,
)
from kafka_tools.errors import UsageError
from kafka_tools.format.java_hash import java_string_hash

# --- independent references ----------------------------------------------------------------------


def utf16_units(text: str) -> list[int]:
    units = []
    for ch in text:
        cp = ord(ch)
        if cp >= 0x10000:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    return units


def ref_hash(text: str) -> int:
    units = utf16_units(text)
    total = sum(u * 31 ** (len(units) - 1 - i) for i, u in enumerate(units))
    return (total + 2**31) % 2**32 - 2**31


def ref_thread_order(threads):
    return sorted(threads, key=lambda t: utf16_units(f"{t.consumer}-{t.index}"))


def ref_round_robin(threads, topic_partitions):
    def compare(a, b):
        ha, hb = ref_hash(f"[{a[0]},{a[1]}]"), ref_hash(f"[{b[0]},{b[1]}]")
        return -1 if ha < hb else (1 if hb < ha else 0)

    ordered = sorted(topic_partitions, key=functools.cmp_to_key(compare))
    return dict(zip(ordered, itertools.cycle(ref_thread_order(threads))))


def ref_range(threads, partitions):
    """The docs' description: hand out sorted partitions in runs, the first P % C runs one longer."""
    threads = ref_thread_order(threads)
    remaining = list(partitions)
    result = {}
    for i, thread in enumerate(threads):
        quota = len(partitions) // len(threads) + (i < len(partitions) % len(threads))
        for _ in range(quota):
            result[remaining.pop(0)] = thread
    return result


# --- Java semantics --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", 0),
        ("a", 97),
        ("Aa", 2112),
        ("BB", 2112),
        ("hello", 99162322),
        ("polygenelubricants", -(2**31)),  # a classic: hashCode is Integer.MIN_VALUE
        ("[t,0]", 87540032),  # ((('['*31 + 't')*31 + ',')*31 + '0')*31 + ']'
        ("[t,10]", -1581226645),  # 2713740651 wraps past 2^31
    ],
)
def test_java_string_hash_matches_known_values(text, expected):
    assert java_string_hash(text) == expected


@given(st.text())
def test_java_string_hash_is_31_polynomial_over_utf16_units_wrapped_to_int32(text):
    assert java_string_hash(text) == ref_hash(text)


# --- thread ids ------------------------------------------------------------------------------------


def test_thread_id_prints_as_consumer_dash_index():
    assert str(ThreadId("group_host-1463000000000-abcd1234", 0)) == "group_host-1463000000000-abcd1234-0"


def test_thread_ids_sort_as_strings_so_c10_comes_before_c2():
    threads = [ThreadId("c", i) for i in (2, 10, 0, 1)]
    assert [str(t) for t in sorted(threads)] == ["c-0", "c-1", "c-10", "c-2"]


def test_thread_ids_sort_by_whole_string_not_by_consumer_then_index():
    # "c-1-0" < "c-10" because '-' (45) < '0' (48); a (consumer, index) tuple order would say otherwise.
    assert sorted([ThreadId("c", 10), ThreadId("c-1", 0)]) == [ThreadId("c-1", 0), ThreadId("c", 10)]


def test_thread_ids_sort_by_utf16_code_unit_like_java():
    # U+FF5E is above the surrogates that encode U+1F600, so Java puts the emoji first.
    assert sorted([ThreadId("\uff5e", 0), ThreadId("\U0001f600", 0)]) == [
        ThreadId("\U0001f600", 0),
        ThreadId("\uff5e", 0),
    ]


@given(st.lists(st.builds(ThreadId, st.text(min_size=1), st.integers(0, 200)), unique=True))
def test_thread_id_order_is_java_string_compare_order(threads):
    assert sorted(threads) == ref_thread_order(threads)


def test_thread_id_parses_an_owner_znode_value():
    assert ThreadId.parse("g_host-1463000000000-abcd1234-12") == ThreadId("g_host-1463000000000-abcd1234", 12)
    with pytest.raises(ValueError):
        ThreadId.parse("no_index")


# --- subscriptions ---------------------------------------------------------------------------------


def test_static_member_gets_one_thread_per_stream_per_topic():
    member = Member("c1", {"b": 2, "a": 1})
    assert threads_for(member, []) == {
        "a": [ThreadId("c1", 0)],
        "b": [ThreadId("c1", 0), ThreadId("c1", 1)],
    }


def test_whitelist_matches_whole_topic_names_and_skips_consumer_offsets():
    member = Member("c1", {"t.*": 2}, WHITE_LIST)
    topics = ["t1", "t2", "xt1", "__consumer_offsets"]
    assert threads_for(member, topics) == {
        "t1": [ThreadId("c1", 0), ThreadId("c1", 1)],
        "t2": [ThreadId("c1", 0), ThreadId("c1", 1)],
    }
    everything = Member("c1", {".*": 1}, WHITE_LIST)
    assert "__consumer_offsets" not in threads_for(everything, topics)
    assert "__consumer_offsets" in threads_for(everything, topics, exclude_internal_topics=False)


def test_blacklist_takes_every_other_topic_except_consumer_offsets():
    member = Member("c1", {"x.*": 1}, BLACK_LIST)
    assert list(threads_for(member, ["t1", "x1", "__consumer_offsets"])) == ["t1"]


def test_wildcard_regex_is_cleaned_like_topicfilter():
    assert wildcard_regex(' "t1, t2" ') == "t1|t2"
    member = Member("c1", {"'a, b'": 1}, WHITE_LIST)
    assert list(threads_for(member, ["a", "b", "ab"])) == ["a", "b"]


def test_empty_or_unknown_pattern_registrations_are_static():
    assert threads_for(Member("c1", {}, WHITE_LIST), ["t"]) == {}
    assert list(threads_for(Member("c1", {"t.*": 1}, "whatever"), ["t1"])) == ["t.*"]


def test_registration_json_becomes_a_member():
    data = '{"version":1,"subscription":{"t.*":3},"pattern":"white_list","timestamp":"1463000000000"}'
    assert member_from_registration("c1", data) == Member("c1", {"t.*": 3}, WHITE_LIST)
    with pytest.raises(AssignmentError):
        member_from_registration("c1", '{"subscription":{}}')


def test_zero_streams_is_refused_like_kafkas_assertion():
    with pytest.raises(AssignmentError):
        threads_for(Member("c1", {"t": 0}), [])


def test_consumers_per_topic_merges_and_sorts_threads():
    members = [Member("c", {"t": 11})]
    assert [str(t) for t in consumers_per_topic(members, [])["t"]][:4] == ["c-0", "c-1", "c-10", "c-2"]


# --- range -----------------------------------------------------------------------------------------


def test_range_matches_the_example_in_kafkas_scaladoc():
    members = [Member("C1", {"t": 2}), Member("C2", {"t": 2})]
    got = range_assign(members, {"t": 5})
    owners = {p: str(th) for (_, p), th in got.items()}
    assert owners == {0: "C1-0", 1: "C1-0", 2: "C1-1", 3: "C2-0", 4: "C2-1"}


def test_range_orders_threads_as_strings_so_c9_is_the_one_left_idle():
    # 11 streams: c-0, c-1, c-10, c-2 ... c-9 in Kafka's order; 10 partitions -> n = 0, the first 10 get one.
    got = range_assign([Member("c", {"t": 11})], {"t": 10})
    assert [str(got[("t", p)]) for p in range(10)] == ["c-0", "c-1", "c-10"] + [f"c-{i}" for i in range(2, 9)]
    assert ThreadId("c", 9) not in got.values()


def test_range_ten_partitions_over_four_threads_c0_c1_c10_c2():
    members = [Member("c", {"t": 3}), Member("c-1", {"t": 1})]  # threads c-0, c-1, c-1-0, c-2
    got = range_assign(members, {"t": 10})
    # n = 2, P % C = 2: positions 0 and 1 take 3 partitions, 2 and 3 take 2.
    assert [str(got[("t", p)]) for p in range(10)] == [
        "c-0",
        "c-0",
        "c-0",
        "c-1",
        "c-1",
        "c-1",
        "c-1-0",
        "c-1-0",
        "c-2",
        "c-2",
    ]


def test_range_three_partitions_over_five_threads_leaves_two_idle():
    members = [Member(f"c{i}", {"t": 1}) for i in range(5)]
    got = range_assign(members, {"t": 3})
    assert {p: th.consumer for (_, p), th in got.items()} == {0: "c0", 1: "c1", 2: "c2"}


def test_range_uses_sorted_partition_ids_by_position():
    got = range_assign([Member("a", {"t": 1}), Member("b", {"t": 1})], {"t": [7, 3, 12]})
    assert {p: th.consumer for (_, p), th in got.items()} == {3: "a", 7: "a", 12: "b"}


def test_range_works_topic_by_topic_for_different_subscriptions():
    members = [Member("a", {"x": 1, "y": 1}), Member("b", {"y": 2})]
    got = range_assign(members, {"x": 2, "y": 3, "z": 4})
    assert {tp: str(th) for tp, th in got.items()} == {
        ("x", 0): "a-0",
        ("x", 1): "a-0",
        ("y", 0): "a-0",
        ("y", 1): "b-0",
        ("y", 2): "b-1",
    }


def test_range_with_wildcards_uses_the_topics_of_the_partition_map():
    got = range_assign([Member("a", {"t.*": 1}, WHITE_LIST)], {"t1": 1, "u": 1, "__consumer_offsets": 50})
    assert list(got) == [("t1", 0)]


topic_names = st.text(alphabet="abcAB_.-019", min_size=1, max_size=6)
consumer_ids = st.text(alphabet="cg_-0123456789", min_size=1, max_size=6)


@st.composite
def static_groups(draw):
    topics = draw(st.lists(topic_names, min_size=1, max_size=4, unique=True))
    ids = draw(st.lists(consumer_ids, min_size=1, max_size=5, unique=True))
    members = []
    for cid in ids:
        subscribed = draw(st.lists(st.sampled_from(topics), unique=True))
        members.append(Member(cid, {t: draw(st.integers(1, 4)) for t in subscribed}))
    partitions = {t: draw(st.integers(0, 30)) for t in topics}
    return members, partitions


@settings(max_examples=200)
@given(static_groups())
def test_range_assigns_every_subscribed_partition_once_in_balanced_contiguous_runs(group):
    members, partitions = group
    got = range_assign(members, partitions)
    per_topic = consumers_per_topic(members, partitions)
    expected = {(t, p) for t in per_topic for p in range(partitions[t])}
    assert set(got) == expected
    for topic, threads in per_topic.items():
        sizes = Counter(th for (t, _), th in got.items() if t == topic)
        counts = [sizes[th] for th in threads]
        assert max(counts) - min(counts) <= 1
        assert {(topic, p): th for (p, th) in ref_range(threads, list(range(partitions[topic]))).items()} == {
            tp: th for tp, th in got.items() if tp[0] == topic
        }


# --- round robin ---------------------------------------------------------------------------------


def test_round_robin_order_is_by_signed_hashcode_of_topic_and_partition_string():
    # "[t,10]" and "[t,11]" overflow to negative hashCodes, so they come before "[t,0]" .. "[t,9]".
    assert round_robin_order([("t", p) for p in range(12)]) == [("t", 10), ("t", 11)] + [
        ("t", p) for p in range(10)
    ]


def test_round_robin_deals_hash_ordered_partitions_to_sorted_threads():
    members = [Member("b", {"t": 1}), Member("a", {"t": 1})]
    got = round_robin_assign(members, {"t": 12})
    owners = {p: th.consumer for (_, p), th in got.items()}
    # order 10, 11, 0, 1, ..., 9 dealt to a-0, b-0, a-0, ...
    assert owners == {10: "a", 11: "b", **{p: "ab"[p % 2] for p in range(10)}}


def test_round_robin_interleaves_topics_by_hash_not_by_name():
    # "[bb,d]" hashes to 2698721182 + 31d, past 2^31, so bb's partitions come before a's (86974003 + 31d).
    members = [Member("x", {"a": 1, "bb": 1}), Member("y", {"a": 1, "bb": 1})]
    got = round_robin_assign(members, {"a": 3, "bb": 3})
    assert {tp: th.consumer for tp, th in got.items()} == {
        ("bb", 0): "x",
        ("bb", 1): "y",
        ("bb", 2): "x",
        ("a", 0): "y",
        ("a", 1): "x",
        ("a", 2): "y",
    }
    assert range_assign(members, {"a": 3, "bb": 3})[("a", 0)].consumer == "x"  # range differs


def test_round_robin_keeps_cycling_threads_across_topics_with_multi_stream_consumers():
    members = [Member("c", {"t": 11})]
    got = round_robin_assign(members, {"t": 12})
    order = [str(got[tp]) for tp in round_robin_order(got)]
    assert order == ["c-0", "c-1", "c-10", "c-2", "c-3", "c-4", "c-5", "c-6", "c-7", "c-8", "c-9", "c-0"]


def test_round_robin_refuses_different_topic_sets():
    members = [Member("a", {"x": 1, "y": 1}), Member("b", {"x": 1})]
    with pytest.raises(AssignmentError, match="same topics"):
        round_robin_assign(members, {"x": 2, "y": 2})


def test_round_robin_refuses_a_consumer_with_different_stream_counts_per_topic():
    with pytest.raises(AssignmentError):
        round_robin_assign([Member("a", {"x": 1, "y": 2})], {"x": 2, "y": 2})


def test_round_robin_allows_different_stream_counts_across_consumers():
    members = [Member("a", {"x": 2, "y": 2}), Member("b", {"x": 1, "y": 1})]
    got = round_robin_assign(members, {"x": 3, "y": 3})
    assert Counter(str(th) for th in got.values()) == {"a-0": 2, "a-1": 2, "b-0": 2}


def test_round_robin_ignores_consumers_subscribed_to_nothing():
    members = [Member("a", {"x": 1}), Member("idle", {})]
    assert set(round_robin_assign(members, {"x": 2}).values()) == {ThreadId("a", 0)}


def test_round_robin_reports_cross_topic_hash_ties():
    # "Aa" and "BB" share a hashCode, so "[Aa,p]" and "[BB,p]" do too: Kafka's order for them is a HashMap's.
    assert round_robin_ties([("Aa", 0), ("BB", 0), ("Aa", 1), ("t", 0)]) == [[("Aa", 0), ("BB", 0)]]


@st.composite
def identical_groups(draw):
    topics = draw(st.lists(topic_names, min_size=1, max_size=4, unique=True))
    ids = draw(st.lists(consumer_ids, min_size=1, max_size=5, unique=True))
    members = [Member(cid, dict.fromkeys(topics, draw(st.integers(1, 3)))) for cid in ids]
    partitions = {t: draw(st.integers(0, 30)) for t in topics}
    return members, partitions


@settings(max_examples=200)
@given(identical_groups())
def test_round_robin_assigns_each_partition_once_and_balances_threads(group):
    members, partitions = group
    got = round_robin_assign(members, partitions)
    tps = [(t, p) for t, n in partitions.items() for p in range(n)]
    assert sorted(got) == sorted(tps)
    threads = [th for m in members for th in next(iter(threads_for(m, []).values()))]
    sizes = Counter(got.values())
    counts = [sizes[th] for th in threads]
    assert max(counts) - min(counts) <= 1
    if not round_robin_ties(tps):
        assert got == ref_round_robin(threads, tps)


def test_assign_dispatches_on_kafkas_strategy_names():
    members = [Member("a", {"t": 1})]
    assert assign("range", members, {"t": 1}) == assign("roundrobin", members, {"t": 1})
    with pytest.raises(UsageError):
        assign("round-robin", members, {"t": 1})
