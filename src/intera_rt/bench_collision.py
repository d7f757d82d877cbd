"""Per-tick cost of the collision_detection monitor (control.collision_detection).

    scripts/env python -m intera_rt.bench_collision [repeats]    # prints run() as JSON

The readings come from the embedded plant in closed loop with the joint controller: 3 s of
fast position moves (speed ratio 1.0) from neutral. update() is then timed on each of them,
`repeats` times over, per call: wall clock (time.perf_counter_ns) and, over the whole run,
the thread's CPU time (time.thread_time), which a busy machine disturbs less. Garbage
collection is off while timing, as the realtime process runs.
"""
import gc
import json
import sys
import time

import numpy as np

from intera_rt.boards.embedded import EmbeddedBoards
from intera_rt.control.base import ArmState, PluginContext, Suppressions
from intera_rt.control.collision_detection import CollisionDetection
from intera_rt.control.joint_control import CommandMode, JointCommandData, JointController
from intera_rt.model import RobotModel
from intera_rt.robot import ARM_JOINTS, LOOP_PERIOD, NEUTRAL

TARGET = (1.5, -2.0, 2.0, 0.5, 2.0, -1.5, 3.0)


def _readings(model, seconds=3.0):
    boards = EmbeddedBoards(model)
    boards.reset_pose(np.r_[NEUTRAL, 0.0])
    boards.set_brakes(False)
    control = JointController(model)
    control.reset(np.array(NEUTRAL))
    control.set_speed_ratio(1.0)
    suppressions = Suppressions()
    out = []
    for i in range(int(round(seconds / LOOP_PERIOD))):
        now = i * LOOP_PERIOD
        r = boards.read()
        if i % 10 == 0:
            control.command(JointCommandData(CommandMode.POSITION, list(ARM_JOINTS),
                                             position=list(TARGET)), now, r.position[:7])
        out.append(ArmState(now, LOOP_PERIOD, r.position[:7], r.velocity[:7], r.effort[:7],
                            r.position[7], r.velocity[7], model.arm_dynamics, suppressions))
        tick = control.tick(now, LOOP_PERIOD, r.position[:7], r.velocity[:7])
        boards.write(np.r_[tick.torque, 0.0])
        boards.advance(LOOP_PERIOD)
    return out, control


def run(repeats=5):
    """Returns {'calls', 'mean_us', 'p50_us', 'p99_us', 'max_us', 'cpu_mean_us'}."""
    model = RobotModel.from_file()
    readings, control = _readings(model)
    monitor = CollisionDetection(PluginContext(model, None))
    durations = []
    gc.disable()
    try:
        cpu0 = time.thread_time()
        for _ in range(repeats):
            monitor.reset(readings[0])
            for state in readings[1:]:
                t0 = time.perf_counter_ns()
                monitor.update(state, control)
                durations.append(time.perf_counter_ns() - t0)
        cpu = time.thread_time() - cpu0
    finally:
        gc.enable()
    d = np.array(durations) / 1e3
    return {'calls': len(d), 'mean_us': round(float(d.mean()), 2),
            'p50_us': round(float(np.percentile(d, 50)), 2),
            'p99_us': round(float(np.percentile(d, 99)), 2), 'max_us': round(float(d.max()), 1),
            'cpu_mean_us': round(cpu / len(d) * 1e6, 2)}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    print(json.dumps(run(int(argv[0]) if argv else 5), indent=2))


if __name__ == '__main__':
    main()
