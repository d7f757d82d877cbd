"""World benchmark: how long a model takes from /gazebo/spawn_sdf_model to
/gazebo/model_states, on a robot of its own (wall clock, the embedded plant by default).

    scripts/env python -m intera_rt.bench.world [--backend NAME] [--n N]

Each of N spawns of a 5 cm block (a new name each time) is timed from the call to the
service (wall clock) to the first /gazebo/model_states message that names it, and to the
service's answer; each block is deleted after. A spawn refused or never seen is counted
as a failure, with its message, never dropped.
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time

import numpy as np

from intera_rt.bench import own_robot, wait_for

BLOCK = ('<sdf version="1.6"><model name="block"><link name="block"><inertial><mass>0.1</mass>'
         '<inertia><ixx>4e-5</ixx><iyy>4e-5</iyy><izz>4e-5</izz></inertia></inertial>'
         '<collision name="c"><pose>0 0 0.025 0 0 0</pose><geometry><box><size>0.05 0.05 0.05'
         '</size></box></geometry></collision></link></model></sdf>')
SEEN_TIMEOUT = 5.0            # s a spawned model may take to show in model_states


def _measure(n):
    import rospy
    from gazebo_msgs.msg import ModelStates
    from gazebo_msgs.srv import DeleteModel, SpawnModel
    from geometry_msgs.msg import Pose
    seen, cond = {}, threading.Condition()

    def on_states(msg):
        now = time.perf_counter()
        with cond:
            for name in msg.name:
                seen.setdefault(name, now)
            cond.notify_all()
    rospy.Subscriber('/gazebo/model_states', ModelStates, on_states, queue_size=10, tcp_nodelay=True)
    for name in ('spawn_sdf_model', 'delete_model'):
        rospy.wait_for_service('/gazebo/' + name, 30.0)
    spawn = rospy.ServiceProxy('/gazebo/spawn_sdf_model', SpawnModel, persistent=True)
    delete = rospy.ServiceProxy('/gazebo/delete_model', DeleteModel, persistent=True)
    wait_for(lambda: seen, 20.0, '/gazebo/model_states')
    visible, answered, failures = [], [], []
    for i in range(n):
        name = 'bench_block_%d' % i
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = 0.7, -0.3 + 0.01 * (i % 60), 0.0
        pose.orientation.w = 1.0
        t0 = time.perf_counter()
        r = spawn(name, BLOCK, '', pose, '')
        t1 = time.perf_counter()
        if not r.success:
            failures.append('%s: refused: %s' % (name, r.status_message))
            continue
        answered.append(t1 - t0)
        with cond:
            if not cond.wait_for(lambda: name in seen, SEEN_TIMEOUT):
                failures.append('%s: not in model_states within %.0f s' % (name, SEEN_TIMEOUT))
            else:
                visible.append(seen[name] - t0)
        delete(name)
    ms = lambda xs: {'mean': 1e3 * float(np.mean(xs)), 'p50': 1e3 * float(np.percentile(xs, 50)),  # noqa: E731
                     'p99': 1e3 * float(np.percentile(xs, 99)), 'max': 1e3 * float(np.max(xs))} \
        if xs else {}
    return {'spawns': n, 'failures': len(failures), 'failure_reasons': failures[:20],
            'visible_ms': ms(visible), 'answered_ms': ms(answered)}


def run(quick=False, backend='embedded', n=None):
    """Boot a robot (wall clock) on `backend` and time N spawns (default 100, quick 20)."""
    import rospy
    n = n or (20 if quick else 100)
    log = os.path.join(tempfile.mkdtemp(prefix='bench_world_'), 'sawyer.log')
    with own_robot(['--backend', backend], log, 90.0):
        rospy.init_node('bench_world', anonymous=True, disable_signals=True)
        out = _measure(n)
    out['robot'] = 'own (scripts/sawyer --backend %s, wall clock)' % backend
    out['load_avg'] = list(os.getloadavg())
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m intera_rt.bench.world',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--backend', default='embedded')
    parser.add_argument('--n', type=int, default=100, help='spawns to time (default 100)')
    args = parser.parse_args(argv)
    print(json.dumps(run(backend=args.backend, n=args.n), indent=2))
    return 0


if __name__ == '__main__':
    sys.exit(main())
