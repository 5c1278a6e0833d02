"""The zygote's spare-CPU reading, over a /proc/stat-shaped file whose ticks we advance."""

from __future__ import annotations

from pathlib import Path

from a01gym.sandbox.inside.spare_cpu import SpareCpu


def _write(stat: Path, user: int, idle: int) -> None:
    # cpu  user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text(f"cpu  {user} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")


def test_spare_only_while_the_machine_sits_idle(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    _write(stat, user=1000, idle=1000)
    meter = SpareCpu(stat)
    _write(stat, user=1190, idle=1010)  # 200 ticks, 5% idle: a throughput run
    assert not meter.available()
    _write(stat, user=1200, idle=1020)  # too short a window to judge: keep the last answer
    assert not meter.available()
    _write(stat, user=1250, idle=1170)  # 220 ticks since the reading kept, 73% idle
    assert meter.available()


def test_an_unreadable_stat_file_does_not_break_the_zygote(tmp_path: Path) -> None:
    meter = SpareCpu(tmp_path / "missing")
    assert meter.available()  # no reading: warm up as before (the standby checks load too)


def test_this_machine_can_be_read() -> None:
    assert SpareCpu()._read()[1] > 0
