"""paused_gc: the collector is off inside, restored after, re-entrant, and a disabled collector stays off."""

import gc
import threading

from g2gt.core.gc_pause import paused_gc


def test_disabled_inside_and_restored_after():
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_pauses_reenable_only_at_the_outermost_exit():
    with paused_gc():
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_restored_after_an_exception():
    try:
        with paused_gc():
            raise KeyError("x")
    except KeyError:
        pass
    assert gc.isenabled()


def test_a_collector_disabled_by_the_program_stays_disabled():
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_threads_reenable_when_the_last_leaves():
    inside, leave = threading.Event(), threading.Event()

    def other():
        with paused_gc():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    with paused_gc():
        pass
    assert not gc.isenabled()  # the other thread is still inside
    leave.set()
    t.join(10)
    assert gc.isenabled()


def test_cycles_made_inside_are_collected_later():
    class Node:
        pass

    with paused_gc():
        a, b = Node(), Node()
        a.other, b.other = b, a
        del a, b
    assert gc.collect() >= 2
