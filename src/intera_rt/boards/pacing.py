"""Wall-clock pacing for the processes that simulate boards on their own clock (the remote
board server, the Gazebo stand-in): a cycle every `period` s, as hardware does."""
import select
import time


class WallPacer:
    """Waits for the next cycle's deadline. A late cycle is not made up: once more than
    `resync_after` periods late, the count starts again from now (the boards skip)."""

    def __init__(self, period, resync_after):
        self.period, self.resync_after = period, resync_after
        self.restart()

    def restart(self):
        """Pace from now (after a pause, or a stall)."""
        self.start, self.k = time.perf_counter(), 0

    def wait(self):
        """Block until the next cycle is due."""
        self.k += 1
        deadline = self.start + self.k * self.period
        now = time.perf_counter()
        if now - deadline > self.resync_after * self.period:
            self.restart()
            return
        if deadline - now > 2e-4:
            # sleep most of it, spin the last ~150 µs (a sleep overshoots by up to ~100 µs)
            select.select([], [], [], deadline - now - 1.5e-4)
        while time.perf_counter() < deadline:
            pass
