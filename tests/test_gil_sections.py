"""_gil.handing_back_often: the switch interval while background loading runs, and its restoration."""
import sys
import threading

import pytest

from mixnet import _gil


@pytest.fixture(autouse=True)
def default_interval():
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def in_thread(fn):
    """Runs fn in a new thread and returns what it returned (re-raising what it raised)."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as err:      # noqa: BLE001 - handed to the test's thread
            box["error"] = err

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def interval_inside():
    with _gil.handing_back_often():
        return sys.getswitchinterval()


def test_a_background_section_lowers_the_interval_and_restores_it():
    assert in_thread(interval_inside) == pytest.approx(_gil.SWITCH_INTERVAL)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_the_main_thread_leaves_the_interval_alone():
    assert interval_inside() == pytest.approx(0.005)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_an_interval_already_shorter_is_kept():
    sys.setswitchinterval(1e-5)
    assert in_thread(interval_inside) == pytest.approx(1e-5)
    assert sys.getswitchinterval() == pytest.approx(1e-5)


def test_overlapping_sections_restore_only_when_the_last_ends():
    first_in, second_done, release = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with _gil.handing_back_often():
            first_in.set()
            release.wait(10)
            seen["first, after the second ended"] = sys.getswitchinterval()

    def second():
        first_in.wait(10)
        with _gil.handing_back_often():
            pass
        second_done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    second_done.wait(10)
    seen["between"] = sys.getswitchinterval()
    release.set()
    for t in threads:
        t.join()
    assert seen["between"] == pytest.approx(_gil.SWITCH_INTERVAL)
    assert seen["first, after the second ended"] == pytest.approx(_gil.SWITCH_INTERVAL)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_a_value_set_during_the_section_is_kept():
    def change_it():
        with _gil.handing_back_often():
            sys.setswitchinterval(0.001)

    in_thread(change_it)
    assert sys.getswitchinterval() == pytest.approx(0.001)


def test_an_error_inside_still_restores():
    def fail():
        with _gil.handing_back_often():
            raise KeyError("x")

    with pytest.raises(KeyError):
        in_thread(fail)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_the_eager_loops_load_inside_a_section(monkeypatch):
    from mixnet.ops import _fastpath
    seen = []
    monkeypatch.setattr(_fastpath, "_load_modules", lambda dtypes: seen.append(sys.getswitchinterval()))
    in_thread(lambda: _fastpath._load(["float32"]))
    assert seen == [pytest.approx(_gil.SWITCH_INTERVAL)]
    assert sys.getswitchinterval() == pytest.approx(0.005)
